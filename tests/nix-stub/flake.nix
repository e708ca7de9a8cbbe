{
  # An offline stand-in for nixpkgs, for evaluating ../../flake.nix where GitHub cannot be reached:
  #   nix flake check --no-build --override-input nixpkgs path:./tests/nix-stub
  # It has just the attributes the flake uses, as derivations that evaluate (and would build to a stub
  # file: nothing here is ever built). mkShell keeps every attribute it is given, as the real one does,
  # so the tests can read BENCH_LOCK_SHA256, LD_LIBRARY_PATH, shellHook... off the shells.
  description = "stub nixpkgs for offline evaluation of the bench flake";

  outputs = { self }:
    let
      system = "x86_64-linux";
      stubDerivation = name: attrs: derivation ({
        inherit name system;
        builder = "/bin/sh";
        args = [ "-c" "echo stub > $out" ];
      } // attrs);
      fake = name: stubDerivation name { };

      lib = {
        makeLibraryPath = packages:
          builtins.concatStringsSep ":" (map (p: "${p}/lib") packages);
      };

      pkgs = {
        inherit lib;
        python311 = fake "python3-3.11.12";
        uv = fake "uv-0.7.3";
        git = fake "git-2.49.0";
        zlib = fake "zlib-1.3.1";
        stdenv = { cc = { cc = { lib = fake "gcc-14.2.1.20250322-lib"; }; }; };
        mkShell = { name ? "nix-shell", packages ? [ ], ... }@args:
          stubDerivation name ((removeAttrs args [ "name" "packages" ]) // {
            nativeBuildInputs = packages;
          });
      };
    in
    {
      inherit lib;
      legacyPackages.${system} = pkgs;
    };
}

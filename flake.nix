{
  description = "Keras 3 benchmarks: one dev shell per backend, each building the same hash-locked venv as the host and the images";

  # Pinned by flake.lock to nixos-25.05 at ac62194c3917d5f474c1a844b6fd6da2db95077d.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-25.05";

  outputs = { self, nixpkgs }:
    let
      system = "x86_64-linux";
      pkgs = nixpkgs.legacyPackages.${system};
      lib = pkgs.lib;

      # The backends' envs on every stack (bench/catalogue/backends.py: today's, then the 2024 stack's
      # <backend>-2024), then the study envs (STUDY_ENVIRONMENTS: the inference grid's transformers-TF);
      # tests/test_flake.py checks that the two lists agree.
      backends = [ "keras2" "tensorflow" "jax" "torch" "native-torch"
                   "keras2-2024" "tensorflow-2024" "jax-2024" "torch-2024" "native-torch-2024"
                   "tf-transformers" ];

      # Shared libraries that manylinux wheels (TensorFlow, JAX, PyTorch, their CUDA wheels) take from
      # the system: libstdc++/libgcc_s and zlib. The NVIDIA driver's libcuda comes from the host
      # (/run/opengl-driver/lib on NixOS).
      wheelLibraries = [ pkgs.stdenv.cc.cc.lib pkgs.zlib ];

      # `nix develop .#NAME`: builds .venvs/NAME with scripts/envs.py (uv venv + uv pip sync
      # --require-hashes envs/NAME/requirements.txt: the same code path and lock as `make env` and the
      # images), then activates it with the backend's cell variables.
      mkBenchShell = name: requirements: pkgs.mkShell {
        name = "bench-${name}";
        packages = [ pkgs.python311 pkgs.uv pkgs.git ];

        BENCH_ENV = name;
        # The lock this shell builds from, as the venv stamp's lock_sha256 records it: changing the
        # requirements changes the shell's derivation.
        BENCH_REQUIREMENTS = "envs/${name}/requirements.txt";
        BENCH_LOCK_SHA256 = builtins.hashFile "sha256" requirements;

        LD_LIBRARY_PATH = "${lib.makeLibraryPath wheelLibraries}:/run/opengl-driver/lib";
        # uv must use this Python 3.11, never download one.
        UV_PYTHON = "${pkgs.python311}/bin/python3.11";
        UV_PYTHON_DOWNLOADS = "never";
        UV_PYTHON_PREFERENCE = "only-system";

        shellHook = ''
          bench_root="$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
          if [ ! -f "$bench_root/scripts/envs.py" ]; then
            echo "bench-${name}: run nix develop from the repository (no scripts/envs.py under $bench_root)" >&2
          elif python3 "$bench_root/scripts/envs.py" build ${name}; then
            source "$bench_root/.venvs/${name}/bin/activate"
            while IFS= read -r kv; do [ -n "$kv" ] && export "$kv"; done \
              < <(python3 "$bench_root/scripts/envs.py" vars ${name})
            echo "bench-${name}: $(python --version) in $bench_root/.venvs/${name} (lock sha256 ''${BENCH_LOCK_SHA256:0:12})" >&2
          else
            echo "bench-${name}: building .venvs/${name} failed; see above" >&2
          fi
        '';
      };

      shellFor = name: mkBenchShell name (./envs + "/${name}/requirements.txt");
    in
    {
      devShells.${system} =
        builtins.listToAttrs (map (name: { inherit name; value = shellFor name; }) backends)
        // {
          # The orchestrator/test env (pytest, report tools); `nix develop` with no name.
          tools = shellFor "tools";
          default = self.devShells.${system}.tools;
        };
    };
}

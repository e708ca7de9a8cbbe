# Containers and Nix: the reproducible Debian base, one image per backend, the offline flake check.
# Included by the top-level Makefile (which defines BACKEND, MODEL and PYTHON).
# System tools: scripts/install-system-deps.sh (podman, buildah, debuerreotype, nix-bin, hadolint).

PYTHON ?= python3
# podman if present, else docker; override with CONTAINER_ENGINE=docker.
CONTAINER_ENGINE ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
IMAGE_NAME ?= localhost/bench
# Extra arguments for `python -m bench run` in bench-container, e.g. BENCH_ARGS="--steps 5".
BENCH_ARGS ?=
CONTAINER_SHM ?= 8g
# The host folder mounted as the image's results/ (the Makefile's RESULTS, default results/), made absolute by the
# shell (make's abspath would split a path holding a space into two).
CONTAINER_RESULTS = $$(realpath -m -- "$(or $(RESULTS),results)")

.PHONY: image image-base bench-container check-containers check-flake image-repro

image-base: ## Build the Debian base with debuerreotype (containers/base.lock) and import it
	containers/build-base.sh

# The image of BACKEND on STACK is named by its env: localhost/bench:jax, localhost/bench:jax-2024.
IMAGE_ENV = $$($(PYTHON) scripts/envs.py env-name "$(BACKEND)" "$(or $(STACK),today)")

image: ## Build BACKEND's image on STACK (podman, else docker); the base if missing
	@$(PYTHON) scripts/envs.py validate "$(BACKEND)"
	@. containers/base.lock && "$(CONTAINER_ENGINE)" image inspect "$$BASE_NAME:$$BASE_TAG" >/dev/null 2>&1 \
		|| containers/build-base.sh
	ENGINE="$(CONTAINER_ENGINE)" PYTHON=$(PYTHON) IMAGE_NAME="$(IMAGE_NAME)" containers/build-image.sh "$(IMAGE_ENV)"

bench-container: ## Run BACKEND and MODEL in its image, RESULTS mounted, GPU passed through
	@$(PYTHON) scripts/envs.py validate "$(BACKEND)"
	@test -n "$(MODEL)" || { echo "bench-container: MODEL= is required (e.g. MODEL=bert)" >&2; exit 2; }
	@engine="$(CONTAINER_ENGINE)"; image="$(IMAGE_NAME):$(IMAGE_ENV)"; gpu=""; \
	test -n "$$engine" || { echo "bench-container: neither podman nor docker found (scripts/install-system-deps.sh)" >&2; exit 2; }; \
	id=$$($$engine image inspect --format '{{.Id}}' "$$image" 2>/dev/null) \
		|| { echo "bench-container: no image $$image: run \`make image BACKEND=$(BACKEND) STACK=$(or $(STACK),today)\`" >&2; exit 2; }; \
	case "$$(basename "$$engine")" in \
	docker) if nvidia-smi -L >/dev/null 2>&1 && $$engine info 2>/dev/null | grep -qi nvidia; then gpu="--gpus all"; fi ;; \
	*) if grep -qs 'nvidia.com/gpu' /etc/cdi/*.yaml /etc/cdi/*.json /var/run/cdi/*.yaml /var/run/cdi/*.json; then \
		gpu="--device nvidia.com/gpu=all"; fi ;; \
	esac; \
	if [ -n "$$gpu" ]; then echo "bench-container: GPU passed through ($$gpu)"; \
	else echo "bench-container: no GPU passthrough (docker: no nvidia runtime/driver; podman: no nvidia CDI spec in /etc/cdi or /var/run/cdi): running on CPU"; fi; \
	mkdir -p "$(CONTAINER_RESULTS)"; \
	set -x; $$engine run --rm --pull=never --shm-size=$(CONTAINER_SHM) $$gpu \
		-v "$(CONTAINER_RESULTS):/opt/bench/results" \
		-e BENCH_GIT_COMMIT="$$(git rev-parse HEAD 2>/dev/null)" -e BENCH_IMAGE="$$image@$$id" \
		"$$image" run --backend "$(BACKEND)" --model "$(MODEL)" --stack "$(or $(STACK),today)" --results-dir /opt/bench/results \
		$(if $(TASK),--task $(TASK)) $(if $(PROFILE),--profile $(PROFILE)) $(if $(STEPS),--steps $(STEPS)) \
		$(if $(REPEATS),--repeats $(REPEATS)) $(BENCH_ARGS)

check-containers: ## Lint containers/Containerfile and Containerfile.base with hadolint
	@command -v hadolint >/dev/null || { echo "check-containers: hadolint not found (scripts/install-system-deps.sh)" >&2; exit 127; }
	hadolint --config containers/.hadolint.yaml containers/Containerfile containers/Containerfile.base

check-flake: ## Evaluate flake.nix offline against the stub nixpkgs
	tests/nix-stub/check-flake.sh

image-repro: ## Build BACKEND's image twice with --no-cache; fail if the IDs differ
	@$(PYTHON) scripts/envs.py validate "$(BACKEND)"
	ENGINE="$(CONTAINER_ENGINE)" PYTHON=$(PYTHON) IMAGE_NAME="$(IMAGE_NAME)" containers/build-image.sh "$(IMAGE_ENV)" --repro

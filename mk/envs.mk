# Python environments: one hash-locked venv per backend under .venvs/, plus `tools`.
# Included by the top-level Makefile (which defines PYTHON and BACKEND).
# scripts/envs.py does the work and decides what is current, so every target always runs it.

PYTHON ?= python3
ENVS_PY := $(PYTHON) scripts/envs.py
# `make lock LOCK_ENVS="jax torch"` re-locks a subset (default: all envs).
LOCK_ENVS ?=

.PHONY: env envs env-tools lock env-info check-locks

env: ## Build/repair .venvs/BACKEND from envs/BACKEND/requirements.txt (BACKEND=keras2|tensorflow|jax|torch|native-torch)
	@$(ENVS_PY) validate "$(BACKEND)"
	$(ENVS_PY) build "$(BACKEND)"

envs: doctor ## Build/repair all five backend envs and the tools env, one after the other
	$(ENVS_PY) build --all

env-tools: ## Build/repair .venvs/tools (pytest, orchestrator, report tools)
	$(ENVS_PY) build tools

lock: ## Re-resolve envs/*/uv.lock from the specs and re-export requirements.txt (needs PyPI; LOCK_ENVS= for a subset)
	$(ENVS_PY) lock $(LOCK_ENVS)

env-info: ## Fingerprint .venvs/BACKEND (every env if BACKEND is empty): versions, CUDA/cuDNN, devices
	@if [ -n "$(BACKEND)" ]; then $(ENVS_PY) validate --allow-tools "$(BACKEND)" && $(ENVS_PY) info "$(BACKEND)"; \
	else $(ENVS_PY) info --all; fi

check-locks: ## Offline: every uv.lock matches its spec, every requirements.txt matches its lock, envs agree
	$(ENVS_PY) check-locks

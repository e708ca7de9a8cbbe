# Python environments: one hash-locked venv per backend under .venvs/, plus `tools`.
# Included by the top-level Makefile (which defines PYTHON and BACKEND).
# scripts/envs.py does the work and decides what is current, so every target always runs it.

PYTHON ?= python3
ENVS_PY := $(PYTHON) scripts/envs.py
# `make lock LOCK_ENVS="jax torch"` re-locks a subset (default: all envs, both stacks).
LOCK_ENVS ?=
# The one 2024-stack env `make test` builds beside today's (its BERT smoke cells prove the stack; all five 2024
# envs would double CI's build time and disk): the smallest, Keras 3.0.5 + keras-nlp 0.8.2 on JAX 0.4.20.
CI_STACK_ENVS := jax-2024

.PHONY: env envs env-tools env-ci-stack lock env-info check-locks

env: ## Build/repair BACKEND's env on STACK: .venvs/BACKEND (today) or .venvs/BACKEND-2024 (STACK=2024), from its lock
	@$(ENVS_PY) validate "$(BACKEND)"
	@name="$$($(ENVS_PY) env-name "$(BACKEND)" "$(STACK)")"; $(ENVS_PY) build "$$name"  # a bad STACK stops at its own error

envs: doctor ## Build/repair the five backend envs of STACK (default today) and the tools env, one after the other
	$(ENVS_PY) build --all --stack "$(STACK)"

env-ci-stack: ## Build/repair the 2024-stack env that `make test` runs (CI_STACK_ENVS: jax-2024)
	$(ENVS_PY) build $(CI_STACK_ENVS)

env-tools: ## Build/repair .venvs/tools (pytest, orchestrator, report tools)
	$(ENVS_PY) build tools

lock: ## Re-resolve envs/*/uv.lock from the specs and re-export requirements.txt (needs PyPI; LOCK_ENVS= for a subset)
	$(ENVS_PY) lock $(LOCK_ENVS)

env-info: ## Fingerprint BACKEND's env on STACK (every env of STACK if BACKEND is empty): versions, CUDA/cuDNN, devices
	@if [ "$(BACKEND)" = tools ]; then $(ENVS_PY) info tools; \
	elif [ -n "$(BACKEND)" ]; then $(ENVS_PY) validate "$(BACKEND)" && $(ENVS_PY) info "$$($(ENVS_PY) env-name "$(BACKEND)" "$(STACK)")"; \
	elif [ "$(STACK)" != today ]; then $(ENVS_PY) info $$($(ENVS_PY) names --stack "$(STACK)"); \
	else $(ENVS_PY) info --all; fi

check-locks: ## Offline: every uv.lock matches its spec, every requirements.txt matches its lock, envs agree
	$(ENVS_PY) check-locks

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

env: ## Build or repair BACKEND's env on STACK from its lock (.venvs/<env>)
	@$(ENVS_PY) validate "$(BACKEND)"
	@name="$$($(ENVS_PY) env-name "$(BACKEND)" "$(STACK)")"; $(ENVS_PY) build "$$name"  # a bad STACK stops at its own error

envs: doctor ## Build or repair the five backend envs of STACK and the tools env
	$(ENVS_PY) build --all --stack "$(STACK)"

env-ci-stack: ## Build or repair the 2024-stack env make test runs (jax-2024)
	$(ENVS_PY) build $(CI_STACK_ENVS)

env-tools: ## Build/repair .venvs/tools (pytest, orchestrator, report tools)
	$(ENVS_PY) build tools

lock: ## Re-resolve envs/*/uv.lock and re-export requirements.txt (PyPI; LOCK_ENVS=)
	$(ENVS_PY) lock $(LOCK_ENVS)

env-info: ## Versions, CUDA/cuDNN build and devices of BACKEND's env (every env if empty)
	@if [ "$(BACKEND)" = tools ]; then $(ENVS_PY) info tools; \
	elif [ -n "$(BACKEND)" ]; then $(ENVS_PY) validate "$(BACKEND)" && $(ENVS_PY) info "$$($(ENVS_PY) env-name "$(BACKEND)" "$(STACK)")"; \
	elif [ "$(STACK)" != today ]; then $(ENVS_PY) info $$($(ENVS_PY) names --stack "$(STACK)"); \
	else $(ENVS_PY) info --all; fi

check-locks: ## Offline: every lock matches its spec and its requirements.txt
	$(ENVS_PY) check-locks

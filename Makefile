# The front door. Every target is one line in `make help`; the Python code does the work.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
BACKEND ?=
MODEL ?=
TASK ?=
PROFILE ?=
# VARIANT=: one or more variants (comma list): a backend's own (native-torch eager,compiled) or a tuning variant
# (bench/catalogue/variants.py: sdpa, attention-dropout-0, fused-attention, matmul-high, loader-workers-N). Default: the backends' own.
VARIANT ?=
STEPS ?=
REPEATS ?=
RESUME ?=
# EXACT=1: the published procedure, for an exact reproduction (paper profile): 100 timed steps, one process a cell.
EXACT ?=
# IGNORE_PLAN=1: run cells that $(RESULTS)/plan-<profile>.json predicts will not fit (make plan; else oom-predicted).
IGNORE_PLAN ?=
# Cells in parallel, one GPU each (bench/run/cluster/parallel.py); refused without a GPU per job.
JOBS ?=
RESULTS ?= results
# `RESULTS=` would make every path "$(RESULTS)/..." one under / or the checkout: refused for every target.
ifeq ($(strip $(RESULTS)),)
$(error RESULTS= is empty: name a results folder (the default is results))
endif
# Every variable a user may set reaches a recipe's shell one of these ways (tests/test_make_variables.py checks each is
# in one list, and that a path or a quoted value is never read bare):
# - a path (PATH_VARIABLES) inside double quotes, where ", \, ` or $ would end the quotes or run something: refused;
# - a path that is part of a command (VENVS: $(TOOLS_PY) is $(VENVS)/tools/bin/python) is letters, digits and
#   / . _ - + alone (WORD_PATH_VARIABLES);
# - a name or number, a list of names, a count or a yes/no: checked below, each in one line before any recipe runs;
# - any text at all (CELL=, REASON=, FOR=) in single quotes, through shell_quote (QUOTED_VARIABLES);
# - a command, or more options for one, passed to the shell as written, by design (SHELL_WORD_VARIABLES: PYTHON=
#   is the interpreter to run, BENCH_ARGS= more `bench run` options): the user's own shell words.
PATH_VARIABLES := RESULTS A B OUT KEEP_RESULTS AGAINST IMAGE_NAME
WORD_PATH_VARIABLES := VENVS
QUOTED_VARIABLES := CELL REASON KEY CALL STUDY FOR
SHELL_WORD_VARIABLES := PYTHON BENCH_ARGS SUBMIT_ARGS CONTAINER_ENGINE
UNQUOTABLE := " \ ` $$
unquotable = $(strip $(foreach c,$(UNQUOTABLE),$(if $(findstring $(c),$(value $(1))),$(c))))
$(foreach v,$(PATH_VARIABLES),$(if $(call unquotable,$(v)),$(error $(v)=$(value $(v)): a path holding \
  $(call unquotable,$(v)) cannot reach the shell quoted; name a folder without it)))
# The software stack: today (envs/<backend>/) or 2024 (keras-benchmarks v0.0.5's pins, envs/<backend>-2024/).
STACK ?= today
# ENV=current: run in the interpreter PYTHON is (an activated venv's python3, a container's), unlocked, building no env;
# its results go to $(RESULTS)/env-current/<environment>/ and make their own table (docs/OWN_ENVIRONMENT.md).
ENV ?=
# VENVS=: where the envs are built and read (default .venvs): make's own commands, scripts/envs.py's builds and
# bench's runs alike (BENCH_VENVS_DIR, bench/base/provenance.py venvs_dir, is how the Python side is told).
VENVS ?= .venvs
ifneq ($(filter command line environment,$(origin VENVS)),)
export BENCH_VENVS_DIR := $(abspath $(VENVS))
endif
TOOLS_PY := $(VENVS)/tools/bin/python
# The backends, models and profiles, from the Python that defines them (bench/catalogue/backends.py, the folders of
# bench/models/, bench/catalogue/profiles.toml): read once, and only by the targets that print them.
REGISTRY = $(eval REGISTRY := $(shell $(PYTHON) -c 'from bench.catalogue.backends import BACKENDS; from bench.catalogue.registry import MODELS; \
	from bench.catalogue.profiles import profiles; print(*(",".join(names) for names in (BACKENDS, MODELS, profiles())))'))$(REGISTRY)
comma := ,
BACKENDS = $(subst $(comma), ,$(word 1,$(REGISTRY)))
MODELS = $(subst $(comma), ,$(word 2,$(REGISTRY)))
PROFILES = $(subst $(comma),|,$(word 3,$(REGISTRY)))

# A name or number (BACKEND=, MODEL=, STEPS=, ...; a list: a,b) is letters, digits and , . _ - alone: anything else
# (a space, a quote, ; or $) would reach a recipe's shell unquoted. Refused in one line before any recipe runs.
NAME_VARIABLES := BACKEND MODEL TASK PROFILE VARIANT STEPS BATCH REPEATS JOBS STACK ENV GRID CELLS ROUNDS PAIRS \
	SLOWDOWNS LOAD SIZE JOB WAIT PYTHON_VERSION BUDGET PACKAGE VERSIONS GOOD BAD PROCESSES MAX_PROCESSES CHANGE \
	DELAYS DELAY_CELLS PARTS THRESHOLD AT STATE BY DTYPE CONTAINER_SHM B_DELAY
# A list of names separated by spaces (LOCK_ENVS="jax torch"): each word a name as above.
NAME_LIST_VARIABLES := LOCK_ENVS
NAME_CHARACTERS := a b c d e f g h i j k l m n o p q r s t u v w x y z A B C D E F G H I J K L M N O P Q R S T U V W \
	X Y Z 0 1 2 3 4 5 6 7 8 9 . _ -
# each digit of $(1) followed by a space: $(words ...) of it counts the digits (a leading x is dropped)
spaced_digits = $(subst x,,$(subst 0,0 ,$(subst 1,1 ,$(subst 2,2 ,$(subst 3,3 ,$(subst 4,4 ,$(subst 5,5 ,$(subst 6,6 ,$(subst 7,7 ,$(subst 8,8 ,$(subst 9,9 ,$(1))))))))))))
without = $(if $(2),$(call without,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(1))
# (Only values given on the command line: the environment may hold an unrelated ENV=, JOB= or SIZE=.)
# (Each value as given, $(value ...): DTYPE='$$(id)' expanded is empty, and would pass.)
$(foreach v,$(NAME_VARIABLES),$(if $(and $(filter command line,$(origin $(v))),$(or $(word 2,$(value $(v))),\
	$(strip $(call without,$(subst $(comma),,$(value $(v))),$(NAME_CHARACTERS))))),\
	$(error $(v)=$(value $(v)): a name or number is letters, digits and . _ - (a list: a,b), nothing else)))
$(foreach v,$(NAME_LIST_VARIABLES),$(if $(and $(filter command line,$(origin $(v))),\
	$(strip $(call without,$(subst $(comma),,$(value $(v))),$(NAME_CHARACTERS)))),\
	$(error $(v)=$(value $(v)): names, each letters, digits and . _ - (separated by spaces), nothing else)))
$(foreach v,$(WORD_PATH_VARIABLES),$(if $(or $(word 2,$(value $(v))),$(strip $(call without,$(value $(v)),$(NAME_CHARACTERS) / +))),\
	$(error $(v)=$(value $(v)): a path that is part of a command is letters, digits and / . _ - + alone, nothing else)))

# A value passed to a recipe's shell as one word, whatever it holds (FOR=/path/o'k/python, CALL=, KEY=): in single
# quotes, each ' in it written '\''.
shell_quote = '$(subst ','\'',$(1))'

# A count (REPEATS=, STEPS=, JOBS=, ...) is a whole number above 0, at most its cap: anything else stops make as it
# reads this file, before any env is built (REPEATS=0 was refused only after every env of bench-all was built, and
# REPEATS=99999999999999999999 was taken). The caps are bench's (bench/base/argtypes.py), each a power of ten.
COUNT_VARIABLES := REPEATS STEPS BATCH JOBS ROUNDS PAIRS PROCESSES MAX_PROCESSES WAIT LOAD
COUNT_CAPS := REPEATS:1000 STEPS:1000000 BATCH:100000 JOBS:1000 ROUNDS:1000 PAIRS:1000 PROCESSES:1000 \
	MAX_PROCESSES:1000 WAIT:1000000 LOAD:1000
cap_of = $(patsubst $(1):%,%,$(filter $(1):%,$(COUNT_CAPS)))
without_leading_zeros = $(if $(filter 0%,$(1)),$(call without_leading_zeros,$(patsubst 0%,%,$(1))),$(1))
# $(1) (digits) past $(2) (a power of ten): as many digits as the cap or more, and not the cap itself
past_cap = $(and $(word $(words $(call spaced_digits,$(2))),$(call spaced_digits,$(1))),$(filter-out $(2),$(1)))
$(foreach v,$(COUNT_VARIABLES),$(if $(and $(filter command line,$(origin $(v))),$(strip $(value $(v)))),\
	$(if $(or $(word 2,$(value $(v))),$(strip $(call without,$(value $(v)),0 1 2 3 4 5 6 7 8 9)),\
	$(if $(strip $(call without,$(value $(v)),0)),,zero),\
	$(call past_cap,$(call without_leading_zeros,$(value $(v))),$(call cap_of,$(v)))),\
	$(error $(v)=$(value $(v)): a count is a whole number above 0, at most $(call cap_of,$(v)), nothing else))))

# The cells' names (BACKEND=, MODEL=, PROFILE=, each a comma list) for the targets that build envs before they run a
# cell: checked against the registry as make reads this file, so that a typo is not found only after every env is
# built. (The grid's BACKEND= names columns, a sweep's any env: their own commands check those.)
CELL_GOALS := bench bench-all bench-cpu-full bench-cpu-mid
ifneq ($(filter $(CELL_GOALS),$(MAKECMDGOALS)),)
$(foreach pair,BACKEND:1 MODEL:2 PROFILE:3,$(foreach v,$(word 1,$(subst :, ,$(pair))),\
	$(if $(filter command line,$(origin $(v))),$(if $(REGISTRY),$(foreach name,$(subst $(comma), ,$($(v))),$(if $(filter $(name),$(subst $(comma), ,$(word $(word 2,$(subst :, ,$(pair))),$(REGISTRY)))),,\
	$(error $(v)=$($(v)): $(name) is none of $(word $(word 2,$(subst :, ,$(pair))),$(REGISTRY)))))))))
endif

# Optional narrowing/overrides passed through to `python -m bench run`.
RUN_ARGS = $(if $(TASK),--task $(TASK)) $(if $(VARIANT),--variant $(VARIANT)) $(if $(PROFILE),--profile $(PROFILE)) $(if $(STEPS),--steps $(STEPS)) \
           $(if $(BATCH),--batch-size $(BATCH)) \
           $(if $(REPEATS),--repeats $(REPEATS)) $(call flag,RESUME,--resume) $(if $(JOBS),--jobs $(JOBS)) \
           $(if $(MAX_PROCESSES),--max-processes $(MAX_PROCESSES)) $(if $(AGAINST),--against "$(AGAINST)") \
           $(call flag,IGNORE_PLAN,--ignore-plan) $(call flag,EXACT,--exact) $(call flag,V,--verbose) --stack $(STACK) \
           --results-dir "$(RESULTS)"
# A yes/no variable: 1, yes or true (any case) gives its option; empty, 0, no or false leaves it off (ACROSS=0 once
# turned the option on); anything else stops make in one line as it reads this file, before any target (an env
# build) runs. The environment's values too: make uses them as it does the command line's.
YES_NO_VARIABLES := RESUME IGNORE_PLAN EXACT QUARANTINE ACROSS FORCE CONTAINER CONFIRM V
lowercase = $(subst A,a,$(subst B,b,$(subst C,c,$(subst D,d,$(subst E,e,$(subst F,f,$(subst G,g,$(subst H,h,$(subst \
	I,i,$(subst L,l,$(subst N,n,$(subst O,o,$(subst R,r,$(subst S,s,$(subst T,t,$(subst U,u,$(subst Y,y,$(1))))))))))))))))))
answer = $(call lowercase,$(strip $($(1))))
flag = $(if $(filter 1 yes true,$(call answer,$(1))),$(2))
$(foreach v,$(YES_NO_VARIABLES),$(if $(and $(call answer,$(v)),$(or $(word 2,$(call answer,$(v))),\
	$(filter-out 1 yes true 0 no false,$(call answer,$(v))))),\
	$(error $(v)=$($(v)): a yes/no variable is 1, yes or true, or 0, no or false (or empty), nothing else)))

# uv, pinned and hash-checked (containers/uv-requirements.txt), fetched into .venvs/.uv on first use:
# the same uv everywhere, whatever is on PATH.
UV := $(abspath $(VENVS))/.uv/uv
export UV

include mk/envs.mk
include mk/containers.mk
include mk/studies.mk

env envs env-tools env-ci-stack lock check-locks env-info: $(UV)

$(UV): containers/uv-requirements.txt
	@mkdir -p $(dir $(UV))
	$(PYTHON) containers/install-uv.py containers/uv-requirements.txt $(dir $(UV))

.PHONY: help help-vars wheelhouse bench bench-all bench-cpu-full bench-cpu-mid plan table test test-durations test-extended test-stack2024 test-fast lint docs check ceilings flops-check bench-overhead clean-results doctor export validate compare unpack submit submit-status

# make help's groups, in order: every target with a `## ` description is in one (a new one lands under "Other").
HELP_GROUPS = Start here=doctor bench-all bench table compare test;\
Studies=ab ab-tally noise grid overhead tuning parity sweep bisect bisect-commits history history-triage bench-cpu-full \
bench-cpu-mid bench-overhead flops-check;\
Environments=envs env env-tools env-info env-ci-stack lock check-locks wheelhouse image image-base image-repro \
bench-container check-containers check-flake check;\
GPU and cluster=gpu-check plan ceilings submit submit-status;\
Results upkeep=validate export clean-results unpack noise-page docs;\
Development=lint test-fast test-extended test-stack2024 test-durations help help-vars

help: ## The targets by group, then the variables (make help-vars: the variables alone)
	@awk -v mode=targets -v groups="$(HELP_GROUPS)" -f scripts/make_help.awk $(MAKEFILE_LIST)
	@echo
	@$(MAKE) --no-print-directory help-vars

help-vars: ## Every variable a target reads, by what it is for
	@{ echo "Variables, each given on the command line (make bench MODEL=bert):"; \
	echo "  cells      BACKEND=<$(BACKENDS)> MODEL=<$(MODELS)> STACK=<today|2024> ENV=current TASK= PROFILE=<$(PROFILES)> VARIANT= STEPS= BATCH= REPEATS= RESUME=1 IGNORE_PLAN=1 EXACT=1 JOBS= RESULTS=$(RESULTS)"; \
	echo "  against    AGAINST=<an earlier results folder> MAX_PROCESSES=<n>: each cell compared with its twin there, as make compare does, and given processes up to n while undecided"; \
	echo "  verbose    V=1: after each finished cell's short line, its full one (every noise gate's reason, its result file), as bench run -v"; \
	echo "  own Python make wheelhouse FOR=<python>; make gpu-check BUDGET=<minutes> [ENV=current RESUME=1]; make bench-all BUDGET=<minutes> [ENV=current RESUME=1] (docs/OWN_ENVIRONMENT.md)"; \
	echo "  python     PYTHON=$(PYTHON): the interpreter that runs the doctor, the env builds and, with ENV=current, the cells"; \
	echo "  2024 stack make envs STACK=2024; make bench BACKEND=jax MODEL=bert STACK=2024 (keras-benchmarks v0.0.5's pins)"; \
	echo "  grid       GRID=<cpu|full|lengths|sample|smoke> MODEL=<bert,distilbert,gpt2,distilgpt2,roberta,xlnet,xlm> BACKEND=<native-torch,tf-transformers,jax,tensorflow,torch or a column>"; \
	echo "  studies    SIZE=default|smoke (overhead); CELLS=<cell keys> ROUNDS= PAIRS= SLOWDOWNS=0,0.05,... LOAD=N DELAYS=0.2 DELAY_CELLS= PARTS=aa,probe,delay MAX_PROCESSES= (noise)"; \
	echo "  parity     MODEL=<bert,gemma,mistral,sam,stable_diffusion> (default all) PROFILE=<smoke|paper|...> DTYPE=<float32|bfloat16> (bfloat16: a GPU, or a CPU with bfloat16 instructions) RESULTS=$(RESULTS)"; \
	echo "  results    OUT=<file> (export, compare); A=<dir, dir,dir,... (runs pooled) or run id> B=<the same> ACROSS=1 (compare); QUARANTINE=1 (validate)"; \
	echo "  slurm      FORCE=1 CONTAINER=1 (each cell in its image) SUBMIT_ARGS=\"<more bench submit options>\" (submit); JOB=<name or id> WAIT=<seconds> (submit-status)"; \
	echo "  containers CONTAINER_ENGINE=<podman|docker> (default: podman if present) IMAGE_NAME=$(IMAGE_NAME) CONTAINER_SHM=$(CONTAINER_SHM) BENCH_ARGS=\"<more bench run options>\" (bench-container)"; \
	echo "  envs       LOCK_ENVS=<env names> (lock); PYTHON_VERSION=$(PYTHON_VERSION) (wheelhouse); KEEP_RESULTS=<dir> (test-extended, test-stack2024); VENVS=$(VENVS) (where every env is built and read)"; \
	echo "  history    CELL=<cell key | sweep key | A/B sweep keys> BY=<date|commit> THRESHOLD=0.001 CONFIRM=1 PROCESSES= MAX_PROCESSES= (history); CELL= AT=<label> STATE=<acknowledged|expected|noise> REASON= (history-triage); CELL= GOOD=<commit> BAD=<commit> PROFILE= CHANGE= (bisect-commits)"; \
	echo "  sweeps     make sweep / bisect: PACKAGE= VERSIONS=a,b,c BACKEND= MODEL= TASK= (or CALL=module:function, or STUDY=keras-overhead) GOOD= BAD= KEY= CHANGE=faster PROCESSES= MAX_PROCESSES="; \
	echo "  ab         A=<side> B=<side> CELL=<key> (or BACKEND= MODEL= TASK=) PROFILE= PROCESSES= MAX_PROCESSES= B_DELAY=0.2 (side B's steps held +20% by the test fixture)"; \
	} | awk -v mode=wrap -f scripts/make_help.awk

# The doctor compares RAM with the plan of the profile about to run (<results>/plan-<profile>.json).
DOCTOR_ARGS = --results-dir "$(RESULTS)" $(if $(PROFILE),--profile $(PROFILE))
bench-cpu-full: DOCTOR_ARGS = --results-dir "$(CPU_FULL_RESULTS)" --profile cpu
bench-cpu-mid: DOCTOR_ARGS = --results-dir "$(CPU_MID_RESULTS)" --profile cpu-mid
doctor: ## Preflight in under 2 s: Python, make, compiler, disk, memory, GPU driver
	@$(PYTHON) -m bench doctor $(DOCTOR_ARGS)

# ENV=current runs in the Python that runs make (a user's own environment, unlocked): no env is built, and the
# doctor, whose checks are for building the locked envs (Python 3.11 among them), is not asked.
bench: $(if $(filter current,$(ENV)),,doctor) ## Run every task of MODEL on BACKEND: make bench BACKEND=jax MODEL=bert
	@test -n "$(BACKEND)" -a -n "$(MODEL)" || { echo "usage: make bench BACKEND=<$(BACKENDS)> MODEL=<model> [ENV=current TASK= PROFILE= STEPS= REPEATS= RESUME=1]" >&2; exit 2; }
ifeq ($(ENV),current)
	$(PYTHON) -m bench run --env current --backend $(BACKEND) --model $(MODEL) $(RUN_ARGS)
	$(PYTHON) -m bench table --results-dir "$(RESULTS)/env-current"
else
	@test -z "$(ENV)" -o "$(ENV)" = locked || { echo "error: ENV=$(ENV): valid values are current (this Python, unlocked) or locked (the default)" >&2; exit 2; }
	@$(MAKE) --no-print-directory env BACKEND=$(BACKEND) STACK=$(STACK)
	@$(MAKE) --no-print-directory env-tools
	$(TOOLS_PY) -m bench run --backend $(BACKEND) --model $(MODEL) $(RUN_ARGS)
endif

# BUDGET=<minutes>: one cell per model x backend first (the published table's questions), then the rest, cut
# cleanly at the budget; what is left is named, and RESUME=1 runs it (bench/run/budget.py). ENV=current: this Python.
BENCH_ALL_ARGS = $(if $(BACKEND),--backend $(BACKEND)) $(if $(MODEL),--model $(MODEL)) $(RUN_ARGS) \
	$(if $(BUDGET),--budget-minutes $(BUDGET))
bench-all: $(if $(filter current,$(ENV)),,doctor envs) ## Run the whole matrix (MODEL=, BACKEND=, TASK= narrow it; BUDGET=<minutes>)
ifeq ($(ENV),current)
	$(PYTHON) -m bench run --env current $(BENCH_ALL_ARGS)
else
	$(TOOLS_PY) -m bench run $(BENCH_ALL_ARGS)
endif

# Every cell of the published table at full size on this CPU, by the cpu profile alone (bench/catalogue/profiles.toml:
# paper shapes, each batch capped at 2, a first step and 2 timed steps, an hour per cell), into a folder of its own.
# Resumes: cells with a current result are skipped, so an interrupted run, or one split by MODEL=/BACKEND=/TASK=,
# picks up where it stopped. BATCH= overrides the capped batch (the 7B fits ran at batch 1 to keep the whole run near
# two hours), STEPS= the timed steps; each result's config says which values came from the command line.
CPU_FULL_RESULTS = $(RESULTS)/cpu-full
bench-cpu-full: doctor envs ## Every published cell at full size on this CPU (batch <= 2) -> cpu-full/
	$(TOOLS_PY) -m bench plan --profile cpu --results-dir "$(CPU_FULL_RESULTS)" $(if $(BATCH),--batch-size $(BATCH)) >/dev/null
	$(TOOLS_PY) -m bench run --profile cpu $(if $(STEPS),--steps $(STEPS)) --resume \
		$(if $(MODEL),--model $(MODEL)) $(if $(BACKEND),--backend $(BACKEND)) $(if $(TASK),--task $(TASK)) $(if $(BATCH),--batch-size $(BATCH)) \
		--results-dir "$(CPU_FULL_RESULTS)"

# The published generate findings (Table 2's Keras-torch / Keras-JAX ratio, keras-hub #2593, F.
# Chollet's Keras-JAX vs HF PyTorch compiled) re-tested on this CPU at the largest size every compared column holds:
# the cpu-mid profile, paper widths with the layers `python -m bench largest` allows (Gemma 6, Mistral 15), only
# the compared columns' generate cells, resumable, one at a time (a Keras-on-JAX cell takes most of 23.5 GiB).
CPU_MID_RESULTS = $(RESULTS)/cpu-mid
bench-cpu-mid: doctor envs ## The published generate ratios at the largest size that fits this CPU
	$(TOOLS_PY) -m bench largest
	$(TOOLS_PY) -m bench plan --profile cpu-mid --results-dir "$(CPU_MID_RESULTS)" >/dev/null
	$(TOOLS_PY) -m bench run --profile cpu-mid --task generate --model gemma --backend torch,jax --resume \
		--results-dir "$(CPU_MID_RESULTS)"
	$(TOOLS_PY) -m bench run --profile cpu-mid --task generate --model mistral --backend torch,jax,native-torch \
		--variant default,compiled --resume --results-dir "$(CPU_MID_RESULTS)"

# The offline wheel bundle for a box that has its frameworks (docs/OWN_ENVIRONMENT.md): PYTHON_VERSION= (default 3.12),
# or FOR=<that box's python>: only what that interpreter lacks, at its Python version, never replacing what it has.
PYTHON_VERSION ?= 3.12
FOR ?=
wheelhouse: ## Download the locked workload libraries (no frameworks) for FOR=<python>, offline
	$(PYTHON) -m bench wheelhouse $(if $(FOR),--for $(call shell_quote,$(value FOR)),--python-version $(PYTHON_VERSION))

# BUDGET=<minutes>: bench-all's and gpu-check's (mk/studies.mk) budget.
BUDGET ?=
# BUDGET= is minutes, a plain positive number (15, 0.5): refused as make reads this file, before any env is built
# (nan, inf, 0 or -1 once ran with no budget, or none; abc was refused only after every env was built)
ifneq ($(strip $(BUDGET)),)
ifneq ($(or $(word 2,$(BUDGET)),$(strip $(call without,$(subst .,,$(BUDGET)),0 1 2 3 4 5 6 7 8 9)),$(word 4,$(subst ., . ,x$(BUDGET)x)),$(if $(strip $(call without,$(BUDGET),0 .)),,zero)),)
$(error BUDGET=$(BUDGET): minutes, a positive number (15, 0.5), nothing else)
endif
# at most 1000000 minutes, as bench checks it: more than seven digits before the point is refused here too
ifneq ($(word 8,$(call spaced_digits,$(firstword $(subst ., ,x$(BUDGET))))),)
$(error BUDGET=$(BUDGET): minutes, at most 1000000)
endif
endif
plan: env-tools ## Per cell: parameters, memory, and whether it fits an A100, an H100, this RAM
	$(TOOLS_PY) -m bench plan --profile $(or $(PROFILE),paper) --results-dir "$(RESULTS)" $(if $(BATCH),--batch-size $(BATCH))

# the checkout's results/ however it is spelt (./results, results/, its absolute path): its table is the README's
table: env-tools ## Write RESULTS.md, its pages, figures, the results page and the README's headline
	$(TOOLS_PY) -m bench table --results-dir "$(RESULTS)" --site "$(RESULTS)/site" $(if $(and $(filter 1,$(words $(RESULTS))),$(filter $(CURDIR)/results,$(abspath $(RESULTS)))),--readme README.md)
	@if [ -d "$(TUNING_RESULTS)" ]; then $(TOOLS_PY) -m bench table --results-dir "$(TUNING_RESULTS)"; fi
	@if [ -d "$(RESULTS)/sweep" ]; then $(TOOLS_PY) -m bench sweep-report --results-dir "$(RESULTS)"; fi

docs: env-tools ## Regenerate docs/RESULT_FORMAT.md's field table from docs/schema/
	$(TOOLS_PY) -m bench schema-doc

validate: env-tools ## Check every result file, naming each bad one and the fix (QUARANTINE=1)
	$(TOOLS_PY) -m bench validate --results-dir "$(RESULTS)" $(call flag,QUARANTINE,--quarantine)

export: env-tools ## Every current result as one CSV (RESULTS/results.csv, or OUT=file)
	$(TOOLS_PY) -m bench export --results-dir "$(RESULTS)" $(if $(OUT),--out "$(OUT)")

compare: env-tools ## Each cell's B / A with its 95% interval and verdict: make compare A=<dir> B=<dir>
	@test -n "$(A)" -a -n "$(B)" || { echo "usage: make compare A=<results dir, several separated by commas (runs pooled), or a run id of RESULTS's history> B=<the same> [OUT=compare/compare.md] [ACROSS=1: decide across different processors] (python -m bench history runs lists the runs)" >&2; exit 2; }
	$(TOOLS_PY) -m bench compare "$(A)" "$(B)" --results-dir "$(RESULTS)" $(if $(OUT),--out "$(OUT)") $(call flag,ACROSS,--across-processors)

unpack: env-tools ## Unpack the packed noise runs, grid results and ab comparisons into their folders (git ignores them)
	$(TOOLS_PY) -m bench unpack "$(RESULTS)"

ceilings: env-tools ## This machine's ceilings (matmul FLOP/s per dtype, triad GB/s) in every built env
	$(TOOLS_PY) -m bench ceilings --results-dir "$(RESULTS)"

flops-check: ## The FLOP formulas against torch's FlopCounterMode and XLA's cost analysis
	$(VENVS)/native-torch/bin/python -m bench flops-torch $(or $(PROFILE),paper)
	$(VENVS)/jax/bin/python -m bench flops-xla smoke

bench-overhead: env-tools ## Measure the harness's own per-step overhead on a trivial step
	$(TOOLS_PY) scripts/harness_overhead.py

check: check-locks check-containers check-flake ## Static checks, offline: locks, exports, hadolint, flake
	@echo "check: all static checks passed"

# `make test` in two phases. First the tests that time real work against fixed bounds (marker wall_clock), alone:
# they want a quiet machine. Then every other test but the extended tier, split into two lanes run side by side, one a
# core, each about half the work by the seconds each test last took (tests/lanes.py, tests/durations.json; `make
# test-durations` refreshes them from this target's reports). keras-cv's StableDiffusion cells (marker keras_cv_sd)
# stay one after another in one lane: they use both cores throughout; the tests not marked slow stay together in one
# lane, never beside one another. A lane run beside the other has its report printed when both have ended. Every
# phase always runs, each says how long it took; make fails if any failed.
# The lanes' framework processes wait passively (OMP_WAIT_POLICY): OpenMP's spinning waits in one lane's PyTorch
# took the core from the other lane's cells (2x slower beside them). No lane test asserts a time: the phase above does,
# so each run's host ceilings probe takes its fewest repeats (BENCH_PROBE_BUDGET_S: 1.1 s -> 0.1 s a `bench run`).
TEST_LANES := not wall_clock and not extended
TEST_LANE_LOG := $(VENVS)/test-lane-2.log
TEST_LANE_ENV := OMP_WAIT_POLICY=PASSIVE BENCH_PROBE_BUDGET_S=0.01
test: doctor envs env-ci-stack ## Build what is needed, then lint and run the test suite less its extended tests (smoke profile on CPU)
	@start=$$(date +%s); $(MAKE) --no-print-directory lint || exit $$?; echo "test: lint took $$(( $$(date +%s) - start )) s"
	@rc=0; start=$$(date +%s); \
	$(TOOLS_PY) -m pytest tests -p no:cacheprovider -ra --durations=15 -m "not slow and wall_clock" --junitxml=$(VENVS)/test-wall-clock.xml || rc=$$?; \
	echo "test: the wall-clock phase took $$(( $$(date +%s) - start )) s"; start=$$(date +%s); \
	$(TEST_LANE_ENV) $(TOOLS_PY) -m pytest tests -p no:cacheprovider -ra --durations=15 -m "$(TEST_LANES)" --lane 2/2 --junitxml=$(VENVS)/test-lane-2.xml > $(TEST_LANE_LOG) 2>&1 & other=$$!; \
	$(TEST_LANE_ENV) $(TOOLS_PY) -m pytest tests -p no:cacheprovider -ra --durations=15 -m "$(TEST_LANES)" --lane 1/2 --junitxml=$(VENVS)/test-lane-1.xml || rc=$$?; \
	echo "test: lane 1 took $$(( $$(date +%s) - start )) s"; \
	wait $$other || rc=$$?; \
	echo "== lane 2 of 2 (run beside lane 1 above) =="; cat $(TEST_LANE_LOG); \
	echo "test: both lanes took $$(( $$(date +%s) - start )) s"; \
	exit $$rc

test-durations: env-tools ## Refresh tests/durations.json from the last make test's reports
	$(TOOLS_PY) scripts/test_durations.py $(or $(wildcard $(VENVS)/test-wall-clock.xml $(VENVS)/test-lane-*.xml),$(error make test-durations: no make test reports in $(VENVS) (test-wall-clock.xml, test-lane-*.xml): run make test first))

# Not in CI (its time): the tests marked extended: smoke cells that repeat a code path `make test` runs
# (tests/test_matrix.py's repeats_a_ci_code_path), second builds and runs of paths make test runs once, the image build
# (make test keeps the containers' static checks), and the 2024 stack's whole smoke matrix, one cell per test;
# test-stack2024 runs the latter alone. docs/ARCHITECTURE.md lists each with what covers its code path in make test.
# KEEP_RESULTS=results keeps each cell's result (how the committed 2024 results were made).
EXTENDED_PYTEST = $(if $(KEEP_RESULTS),BENCH_KEEP_RESULTS="$$(realpath -m -- "$(KEEP_RESULTS)")") $(TOOLS_PY) -m pytest tests -p no:cacheprovider -ra --durations=15
test-extended: doctor envs env-tools ## The tests make test leaves out: repeated cells, the image build, the 2024 stack's matrix
	@$(MAKE) --no-print-directory envs STACK=2024
	$(EXTENDED_PYTEST) -m extended

test-stack2024: doctor env-tools ## The 2024 stack's smoke matrix as tests (KEEP_RESULTS=<dir> keeps them)
	@$(MAKE) --no-print-directory envs STACK=2024
	$(EXTENDED_PYTEST) -m stack2024

lint: env-tools ## ruff, and the import layers of .importlinter (import-linter)
	$(TOOLS_PY) -m ruff check .
	$(TOOLS_PY) -c 'from importlinter.cli import lint_imports_command; lint_imports_command()' --no-cache

test-fast: env-tools ## Unit and orchestrator tests only, no framework environment needed
	$(TOOLS_PY) -m pytest tests -ra -m "not envs and not container and not slow"

clean-results: ## Remove the logs a run wrote under RESULTS (result files are kept)
	$(PYTHON) -m bench clean-results --results-dir "$(RESULTS)"

# Slurm (bench/run/cluster/): one array task per cell; docs/CLUSTER.md. BACKEND/MODEL/TASK take comma lists.
submit: env-tools ## Submit cells to Slurm, one array task each (FORCE=1 re-runs measured ones)
	$(TOOLS_PY) -m bench submit $(if $(BACKEND),--backend $(BACKEND)) $(if $(MODEL),--model $(MODEL)) $(if $(TASK),--task $(TASK)) \
		$(if $(PROFILE),--profile $(PROFILE)) $(if $(STEPS),--steps $(STEPS)) $(if $(BATCH),--batch-size $(BATCH)) \
		$(call flag,FORCE,--force) $(call flag,CONTAINER,--container) \
		--results-dir "$(RESULTS)" $(SUBMIT_ARGS)

submit-status: env-tools ## Per-cell state of a Slurm submission (JOB=, default the latest)
	$(TOOLS_PY) -m bench submit-status --results-dir "$(RESULTS)" $(if $(JOB),--job $(JOB)) $(if $(WAIT),--wait $(WAIT))

# Each study's targets (bench/studies/<study>/, docs/ADDING_A_STUDY.md), one part a study, each running
# `python -m bench <verb>`, the verb its package registers (bench/studies/registry.py). Included by the Makefile, whose
# HELP_GROUPS place each target in `make help`.

.PHONY: grid tuning overhead gpu-check noise noise-page parity sweep bisect history history-triage bisect-commits ab ab-tally

# The inference grid study (bench/studies/grid/): GRID=cpu (default) | full (the published grid, 30 repeats) | lengths | sample | smoke.
GRID ?=
grid: env-tools ## Inference grid (HF 2019 PyTorch vs TensorFlow, and Keras 3) -> GRID.md (GRID=)
	@for e in $(or $(filter native-torch tf-transformers jax tensorflow torch,$(subst $(comma), ,$(BACKEND))),native-torch tf-transformers jax tensorflow torch); do \
		$(MAKE) --no-print-directory env BACKEND=$$e; done
	$(TOOLS_PY) -m bench grid $(if $(GRID),--grid $(GRID)) $(if $(MODEL),--model $(MODEL)) $(if $(BACKEND),--backend $(BACKEND)) --results-dir "$(RESULTS)"

# The tuning study: ViT on the Keras 3 backends and native PyTorch, each tuning variant beside its
# reference. PROFILE= (default: cpu, full width at a small batch; paper on a GPU). Its results go to their own folder,
# $(RESULTS)/tuning (not a row of the published table), which make table renders into its RESULTS.md and TUNING.md.
TUNING_PROFILE = $(or $(PROFILE),cpu)
TUNING_RESULTS = $(RESULTS)/tuning
tuning: doctor envs ## The tuning study (ViT variants beside the defaults; PROFILE=, default cpu)
	$(TOOLS_PY) -m bench run --profile $(TUNING_PROFILE) --model vit --task fit --backend jax,torch,native-torch \
		--variant default,eager,compiled,sdpa,attention-dropout-0,matmul-high,loader-workers-0,loader-workers-2 \
		$(if $(filter cpu,$(TUNING_PROFILE)),--warmup 1 --steps $(or $(STEPS),5) --timeout 1800,$(if $(STEPS),--steps $(STEPS))) \
		$(call flag,RESUME,--resume) --results-dir "$(TUNING_RESULTS)"

# The framework-overhead study (bench/studies/overhead/): keras#22561 / #22660's small CNN and 2-layer LM on eight
# columns (pure PyTorch eager/compile, Keras on torch eager/compile, pure JAX eager/jit, Keras on JAX eager/jit), one
# worker per env (torch, jax) -> $(RESULTS)/overhead/, $(RESULTS)/OVERHEAD.md. SIZE=smoke: toy shapes (the tests).
overhead: doctor ## Framework-overhead study: Keras vs pure torch and JAX -> OVERHEAD.md (SIZE=)
	@for e in torch jax; do $(MAKE) --no-print-directory env BACKEND=$$e; done
	@$(MAKE) --no-print-directory env-tools
	$(TOOLS_PY) -m bench overhead $(if $(SIZE),--size $(SIZE)) --results-dir "$(RESULTS)"

# The checks only a GPU can answer (bench/studies/gpucheck/run.py), most valuable first, within BUDGET= minutes (default 15); the
# report is rewritten as each check ends and RESUME=1 goes on with a cut-off run. Refused in one line (exit 2,
# nothing built or written) on a machine without a GPU: the refusal runs in $(PYTHON), before any env is built.
GPU_CHECK_ARGS = --results-dir "$(RESULTS)" $(if $(BUDGET),--budget-minutes $(BUDGET)) $(call flag,RESUME,--resume)
gpu-check: ## On one GPU within BUDGET= minutes: device sync, then short paper cells
	@$(PYTHON) -m bench gpu-check --preflight
ifeq ($(ENV),current)
	$(PYTHON) -m bench gpu-check --env current $(GPU_CHECK_ARGS)
else
	@$(MAKE) --no-print-directory env-tools
	$(TOOLS_PY) -m bench gpu-check $(GPU_CHECK_ARGS)
endif

# The machine's noise study (bench/studies/noise/run.py, docs/METHOD.md): identical code compared with itself on product
# cells (CELLS=: cell keys, default the 8 BERT smoke cells; ROUNDS=, default 2; REPEATS=: processes a side, default
# the profile's), the process-to-process spread that one-process cells borrow, and the smallest slowdown of a
# calibration probe the verdict detects (SLOWDOWNS=, default 0,0.05,0.1,0.2; PAIRS=, default 8). 15-71 minutes here.
# DELAYS=0.2 adds power on product cells: each step of side B held +20% by tests/fixtures/step_delay (DELAY_CELLS=
# cell keys, default CELLS), PAIRS pairs each, inside a run and across runs; PARTS=delay runs that part alone.
CELLS ?=
DELAYS ?=
DELAY_CELLS ?=
PARTS ?=
ROUNDS ?=
PAIRS ?=
SLOWDOWNS ?=
NOISE_BACKENDS = $(or $(sort $(foreach c,$(subst $(comma), ,$(CELLS) $(DELAY_CELLS)),$(firstword $(subst __, ,$(c))))),jax torch native-torch)
noise: doctor ## How small a difference this machine can show (A/A, spread, power) -> NOISE.md
	@for e in $(NOISE_BACKENDS); do $(MAKE) --no-print-directory env BACKEND=$$e; done
	@$(MAKE) --no-print-directory env-tools
	$(TOOLS_PY) -m bench noise $(if $(CELLS),--cells $(CELLS)) $(if $(ROUNDS),--rounds $(ROUNDS)) \
		$(if $(REPEATS),--repeats $(REPEATS)) $(if $(PAIRS),--pairs $(PAIRS)) $(if $(SLOWDOWNS),--slowdowns $(SLOWDOWNS)) \
		$(if $(PROFILE),--profile $(PROFILE)) $(if $(LOAD),--under-load $(LOAD)) $(if $(DELAYS),--delays $(DELAYS)) \
		$(if $(DELAY_CELLS),--delay-cells $(DELAY_CELLS)) $(if $(PARTS),--parts $(PARTS)) \
		$(if $(MAX_PROCESSES),--max-processes $(MAX_PROCESSES)) --results-dir "$(RESULTS)"

noise-page: env-tools ## Render NOISE.md again from the noise study files, measuring nothing
	$(TOOLS_PY) -m bench noise-page --results-dir "$(RESULTS)"

parity: env-tools ## Output parity on shared weights (Keras 3 backends, native PyTorch) -> PARITY.md
	$(TOOLS_PY) -m bench parity --results-dir "$(RESULTS)" $(foreach m,$(subst $(comma), ,$(MODEL)),--model $(m)) \
		$(if $(PROFILE),--profile $(PROFILE)) $(if $(DTYPE),--dtype $(DTYPE))

# Performance across releases (bench/studies/sweep/, docs/STUDIES.md): one package at several versions, each in an env derived
# from BACKEND's lock with that version and the fewest co-changes the resolver needs (hash-locked under envs/sweep/,
# built once under .venvs/sweep/), processes round-robin across versions -> $(RESULTS)/sweep/, $(RESULTS)/SWEEP.md.
PACKAGE ?=
VERSIONS ?=
STUDY ?=
GOOD ?=
BAD ?=
# what a process measures, instead of MODEL= TASK=: one function of the package, module:function (asv-style)
CALL ?=
# the result key a bisect judges (default: the target's first); PROCESSES=: processes per version (default 3);
# MAX_PROCESSES=: more, up to this many, for the versions of an undecided comparison (default twice PROCESSES)
KEY ?=
PROCESSES ?=
MAX_PROCESSES ?=
# CHANGE=faster: a bisect looks for the first faster release (where an improvement came) instead of the first slower
CHANGE ?=
SWEEP_ARGS = $(if $(STUDY),--study $(call shell_quote,$(value STUDY))) $(if $(PACKAGE),--package $(PACKAGE)) $(if $(BACKEND),--backend $(BACKEND)) \
	$(if $(MODEL),--model $(MODEL)) $(if $(TASK),--task $(TASK)) $(if $(VARIANT),--variant $(VARIANT)) \
	$(if $(PROFILE),--profile $(PROFILE)) $(if $(STEPS),--steps $(STEPS)) $(if $(BATCH),--batch-size $(BATCH)) \
	$(if $(CALL),--call $(call shell_quote,$(value CALL))) $(if $(PROCESSES),--processes $(PROCESSES)) \
	$(if $(MAX_PROCESSES),--max-processes $(MAX_PROCESSES)) --results-dir "$(RESULTS)"

sweep: doctor env-tools ## Sweep PACKAGE= over VERSIONS=a,b,c on one cell (or STUDY=keras-overhead)
	@test -n $(call shell_quote,$(value STUDY)) -o \( -n "$(PACKAGE)" -a -n "$(VERSIONS)" -a -n "$(BACKEND)" \) || { echo "usage: make sweep PACKAGE=<name> VERSIONS=<a,b,c> BACKEND=<env> MODEL= TASK= [PROCESSES=] | make sweep STUDY=<a name of bench/studies/sweep/studies/, or a study file>" >&2; exit 2; }
	$(TOOLS_PY) -m bench sweep $(SWEEP_ARGS) $(if $(VERSIONS),--versions $(VERSIONS))

bisect: doctor env-tools ## The first release between GOOD= and BAD= where PACKAGE='s cell got slower
	@test -n "$(GOOD)" -a -n "$(BAD)" -a \( -n $(call shell_quote,$(value STUDY)) -o \( -n "$(PACKAGE)" -a -n "$(BACKEND)" \) \) || { echo "usage: make bisect PACKAGE=<name> GOOD=<version> BAD=<version> BACKEND=<env> MODEL= TASK= [KEY=] | STUDY=<name> GOOD= BAD= KEY=" >&2; exit 2; }
	$(TOOLS_PY) -m bench bisect $(SWEEP_ARGS) --good $(GOOD) --bad $(BAD) $(if $(KEY),--key $(call shell_quote,$(value KEY))) \
		$(if $(filter faster,$(CHANGE)),--faster,$(if $(filter-out slower,$(CHANGE)),$(error CHANGE=$(CHANGE): slower or faster)))

# A key's results across commits, releases and machines (bench/studies/history/, docs/HISTORY.md): its series per processor
# and stack with each point's interval, its change points, the Judge's verdict and the bisects' word on each.

# CELL=: a cell key (jax__bert__fit__bs2__default), a release sweep's key, or two sweep keys A/B (A over B, paired
# within each process); quoted into the recipe, checked by the command (an unknown one is refused naming the nearest)
CELL ?=
# BY=commit: a cell's points one per commit (its results pooled) instead of one per result file (BY=date, default)
BY ?=
# THRESHOLD=: the t-test's p-value a change point must pass (default 0.001, Apache Otava's)
THRESHOLD ?=
# CONFIRM=1: re-measure each change's two sides: the releases of a release series (a sweep of the two), the commits
# of a series by date or commit (each checked out in a worktree, run by its own code), then bisect the commits between;
# PROCESSES= MAX_PROCESSES= (the sweep's, above) size a commit's processes
CONFIRM ?=
# history-triage: AT= the label of the first point after the change (a release, or a stamp such as 20261125T211853Z),
# STATE=acknowledged|expected|noise, REASON= why (kept in $(RESULTS)/history-triage.json)
AT ?=
STATE ?=
REASON ?=

RULE_ARGS = $(if $(PROCESSES),--processes $(PROCESSES)) $(if $(MAX_PROCESSES),--max-processes $(MAX_PROCESSES))

history: env-tools ## CELL='s series per processor and stack, its change points judged and bisected
	@test -n $(call shell_quote,$(value CELL)) || { echo "usage: make history CELL=<cell key, sweep key, or A/B sweep keys> [BY=commit THRESHOLD=0.001 CONFIRM=1] (python -m bench history keys lists them)" >&2; exit 2; }
	$(TOOLS_PY) -m bench history show --cell $(call shell_quote,$(value CELL)) $(if $(BY),--by $(BY)) $(if $(THRESHOLD),--threshold $(THRESHOLD)) \
		$(call flag,CONFIRM,--confirm) $(RULE_ARGS) --results-dir "$(RESULTS)"

history-triage: env-tools ## Mark CELL='s change at AT= acknowledged, expected or noise (STATE=, REASON=)
	@test -n $(call shell_quote,$(value CELL)) -a -n "$(AT)" -a -n "$(STATE)" -a -n $(call shell_quote,$(value REASON)) || { echo "usage: make history-triage CELL=<key> AT=<label> STATE=<acknowledged|expected|noise> REASON='<why>'" >&2; exit 2; }
	$(TOOLS_PY) -m bench history triage --cell $(call shell_quote,$(value CELL)) --at $(AT) --state $(STATE) \
		--reason $(call shell_quote,$(value REASON)) $(if $(THRESHOLD),--threshold $(THRESHOLD)) --results-dir "$(RESULTS)"

bisect-commits: env-tools ## CELL= re-run at GOOD= and BAD= commits, then the first changed commit
	@test -n $(call shell_quote,$(value CELL)) -a -n "$(GOOD)" -a -n "$(BAD)" || { echo "usage: make bisect-commits CELL=<cell key> GOOD=<commit> BAD=<commit> [PROFILE= (default: its newest result's) CHANGE=slower|faster PROCESSES=3 MAX_PROCESSES=6]" >&2; exit 2; }
	$(TOOLS_PY) -m bench history commits --cell $(call shell_quote,$(value CELL)) --good $(call shell_quote,$(value GOOD)) \
		--bad $(call shell_quote,$(value BAD)) $(if $(PROFILE),--profile $(PROFILE)) $(if $(CHANGE),--change $(CHANGE)) \
		$(RULE_ARGS) --results-dir "$(RESULTS)"

# Did B make a cell slower than A? (bench/studies/ab/, docs/AB.md): both sides re-measured interleaved in one invocation
# (A B, B A, ...), processes until decided, judged as one run -> $(RESULTS)/ab/<key>/.
# A=, B=: a side each: a git commit, <package>==<version>, a wheel file, a Python interpreter, or stack:<name>.
# CELL=<cell key>[,<key>...], or BACKEND= MODEL= (TASK= VARIANT=) for the profile's cells; PROFILE= (default smoke);
# PROCESSES= MAX_PROCESSES= (the sweep's, above) size a side's processes. B_DELAY=0.2: side B's every timed step held +20% by
# the test fixture tests/fixtures/step_delay (what a comparison detects, on a real cell; never a product setting).
B_DELAY ?=

ab: env-tools ## Is B slower than A? Both re-measured interleaved: make ab A=<side> B=<side> CELL=<key>
	@test -n $(call shell_quote,$(value A)) -a -n $(call shell_quote,$(value B)) -a \( -n $(call shell_quote,$(value CELL)) -o \( -n "$(BACKEND)" -a -n "$(MODEL)" \) \) || { echo "usage: make ab A=<commit | package==version | wheel file | python | stack:2024> B=<the same> CELL=<cell key> (or BACKEND= MODEL= TASK=) [PROFILE=smoke PROCESSES=3 MAX_PROCESSES=6]" >&2; exit 2; }
	$(TOOLS_PY) -m bench ab --a $(call shell_quote,$(value A)) --b $(call shell_quote,$(value B)) \
		$(if $(value CELL),--cell $(call shell_quote,$(value CELL))) $(if $(BACKEND),--backend $(BACKEND)) \
		$(if $(MODEL),--model $(MODEL)) $(if $(TASK),--task $(TASK)) $(if $(VARIANT),--variant $(VARIANT)) \
		$(if $(PROFILE),--profile $(PROFILE)) $(if $(B_DELAY),--b-delay $(B_DELAY)) $(RULE_ARGS) --results-dir "$(RESULTS)"

ab-tally: env-tools ## make ab's comparisons counted by kind, each rate with its 95% bound (OUT=file writes it too)
	$(TOOLS_PY) -m bench ab-tally --results-dir "$(RESULTS)" $(if $(OUT),--out "$(OUT)")

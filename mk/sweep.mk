# Performance across releases (bench/studies/sweep/, docs/STUDIES.md): one package at several versions, each in an env derived
# from BACKEND's lock with that version and the fewest co-changes the resolver needs (hash-locked under envs/sweep/,
# built once under .venvs/sweep/), processes round-robin across versions -> $(RESULTS)/sweep/, $(RESULTS)/SWEEP.md.
# Included by the top-level Makefile.

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

.PHONY: sweep bisect

sweep: doctor env-tools ## Sweep PACKAGE= over VERSIONS=a,b,c on one cell (or STUDY=keras-overhead)
	@test -n $(call shell_quote,$(value STUDY)) -o \( -n "$(PACKAGE)" -a -n "$(VERSIONS)" -a -n "$(BACKEND)" \) || { echo "usage: make sweep PACKAGE=<name> VERSIONS=<a,b,c> BACKEND=<env> MODEL= TASK= [PROCESSES=] | make sweep STUDY=<a name of bench/studies/sweep/studies/, or a study file>" >&2; exit 2; }
	$(TOOLS_PY) -m bench.studies.sweep sweep $(SWEEP_ARGS) $(if $(VERSIONS),--versions $(VERSIONS))

bisect: doctor env-tools ## The first release between GOOD= and BAD= where PACKAGE='s cell got slower
	@test -n "$(GOOD)" -a -n "$(BAD)" -a \( -n $(call shell_quote,$(value STUDY)) -o \( -n "$(PACKAGE)" -a -n "$(BACKEND)" \) \) || { echo "usage: make bisect PACKAGE=<name> GOOD=<version> BAD=<version> BACKEND=<env> MODEL= TASK= [KEY=] | STUDY=<name> GOOD= BAD= KEY=" >&2; exit 2; }
	$(TOOLS_PY) -m bench.studies.sweep bisect $(SWEEP_ARGS) --good $(GOOD) --bad $(BAD) $(if $(KEY),--key $(call shell_quote,$(value KEY))) \
		$(if $(filter faster,$(CHANGE)),--faster,$(if $(filter-out slower,$(CHANGE)),$(error CHANGE=$(CHANGE): slower or faster)))

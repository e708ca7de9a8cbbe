# A key's results across commits, releases and machines (bench/studies/history/, docs/HISTORY.md): its series per processor
# and stack with each point's interval, its change points, the Judge's verdict and the bisects' word on each.
# Included by the top-level Makefile.

# CELL=: a cell key (jax__bert__fit__bs2__default), a release sweep's key, or two sweep keys A/B (A over B, paired
# within each process); quoted into the recipe, checked by the command (an unknown one is refused naming the nearest)
CELL ?=
# BY=commit: a cell's points one per commit (its results pooled) instead of one per result file (BY=date, default)
BY ?=
# THRESHOLD=: the t-test's p-value a change point must pass (default 0.001, Apache Otava's)
THRESHOLD ?=
# CONFIRM=1: re-measure each change's two sides: the releases of a release series (a sweep of the two), the commits
# of a series by date or commit (each checked out in a worktree, run by its own code), then bisect the commits between;
# PROCESSES= MAX_PROCESSES= (sweep.mk's) size a commit's processes
CONFIRM ?=
# history-triage: AT= the label of the first point after the change (a release, or a stamp such as 20261125T211853Z),
# STATE=acknowledged|expected|noise, REASON= why (kept in $(RESULTS)/history-triage.json)
AT ?=
STATE ?=
REASON ?=

RULE_ARGS = $(if $(PROCESSES),--processes $(PROCESSES)) $(if $(MAX_PROCESSES),--max-processes $(MAX_PROCESSES))

.PHONY: history history-triage bisect-commits

history: env-tools ## CELL='s series per processor and stack, its change points judged and bisected
	@test -n $(call shell_quote,$(value CELL)) || { echo "usage: make history CELL=<cell key, sweep key, or A/B sweep keys> [BY=commit THRESHOLD=0.001 CONFIRM=1] (python -m bench.studies.history keys lists them)" >&2; exit 2; }
	$(TOOLS_PY) -m bench.studies.history show --cell $(call shell_quote,$(value CELL)) $(if $(BY),--by $(BY)) $(if $(THRESHOLD),--threshold $(THRESHOLD)) \
		$(call flag,CONFIRM,--confirm) $(RULE_ARGS) --results-dir "$(RESULTS)"

history-triage: env-tools ## Mark CELL='s change at AT= acknowledged, expected or noise (STATE=, REASON=)
	@test -n $(call shell_quote,$(value CELL)) -a -n "$(AT)" -a -n "$(STATE)" -a -n $(call shell_quote,$(value REASON)) || { echo "usage: make history-triage CELL=<key> AT=<label> STATE=<acknowledged|expected|noise> REASON='<why>'" >&2; exit 2; }
	$(TOOLS_PY) -m bench.studies.history triage --cell $(call shell_quote,$(value CELL)) --at $(AT) --state $(STATE) \
		--reason $(call shell_quote,$(value REASON)) $(if $(THRESHOLD),--threshold $(THRESHOLD)) --results-dir "$(RESULTS)"

bisect-commits: env-tools ## CELL= re-run at GOOD= and BAD= commits, then the first changed commit
	@test -n $(call shell_quote,$(value CELL)) -a -n "$(GOOD)" -a -n "$(BAD)" || { echo "usage: make bisect-commits CELL=<cell key> GOOD=<commit> BAD=<commit> [PROFILE= (default: its newest result's) CHANGE=slower|faster PROCESSES=3 MAX_PROCESSES=6]" >&2; exit 2; }
	$(TOOLS_PY) -m bench.studies.history commits --cell $(call shell_quote,$(value CELL)) --good $(call shell_quote,$(value GOOD)) \
		--bad $(call shell_quote,$(value BAD)) $(if $(PROFILE),--profile $(PROFILE)) $(if $(CHANGE),--change $(CHANGE)) \
		$(RULE_ARGS) --results-dir "$(RESULTS)"

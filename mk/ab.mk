# Did B make a cell slower than A? (bench/studies/ab/, docs/AB.md): both sides re-measured interleaved in one invocation
# (A B, B A, ...), processes until decided, judged as one run -> $(RESULTS)/ab/<key>/. Included by the top-level Makefile.
# A=, B=: a side each: a git commit, <package>==<version>, a wheel file, a Python interpreter, or stack:<name>.
# CELL=<cell key>[,<key>...], or BACKEND= MODEL= (TASK= VARIANT=) for the profile's cells; PROFILE= (default smoke);
# PROCESSES= MAX_PROCESSES= (sweep.mk's) size a side's processes. B_DELAY=0.2: side B's every timed step held +20% by
# the test fixture tests/fixtures/step_delay (what a comparison detects, on a real cell; never a product setting).
B_DELAY ?=

.PHONY: ab

ab: env-tools ## Is B slower than A? Both re-measured interleaved: make ab A=<side> B=<side> CELL=<key>
	@test -n $(call shell_quote,$(value A)) -a -n $(call shell_quote,$(value B)) -a \( -n $(call shell_quote,$(value CELL)) -o \( -n "$(BACKEND)" -a -n "$(MODEL)" \) \) || { echo "usage: make ab A=<commit | package==version | wheel file | python | stack:2024> B=<the same> CELL=<cell key> (or BACKEND= MODEL= TASK=) [PROFILE=smoke PROCESSES=3 MAX_PROCESSES=6]" >&2; exit 2; }
	$(TOOLS_PY) -m bench.studies.ab --a $(call shell_quote,$(value A)) --b $(call shell_quote,$(value B)) \
		$(if $(value CELL),--cell $(call shell_quote,$(value CELL))) $(if $(BACKEND),--backend $(BACKEND)) \
		$(if $(MODEL),--model $(MODEL)) $(if $(TASK),--task $(TASK)) $(if $(VARIANT),--variant $(VARIANT)) \
		$(if $(PROFILE),--profile $(PROFILE)) $(if $(B_DELAY),--b-delay $(B_DELAY)) $(RULE_ARGS) --results-dir "$(RESULTS)"

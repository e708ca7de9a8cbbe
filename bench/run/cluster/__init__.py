"""Beyond one machine: Slurm array jobs (submit, task, status), a one-node test cluster, and GPU-pinned
parallel cells on one multi-GPU box. Stdlib only, like the orchestrator it drives."""

"""One table from a task's declared driver (bench.catalogue.spec.TaskSpec) to the code that runs its steps.

Every driver opens and closes windows through the timing core (bench.base.timing.StepTimer), which alone reads the
clock. Framework loops (Keras fit/predict, the transformers Trainer) tile their windows: each closes at a step's
end and the next opens at once, so what the loop does between steps (taking the next batch from its in-memory
source, its bookkeeping) counts on every backend alike. Keras 3 on PyTorch takes the next batch before
on_train_batch_begin while JAX and TensorFlow take it inside their step function: tiling times the same thing
on all three. The loops are started with the plan's largest step count (its warm-up and timed caps) and stopped
once the timer has its windows, which a sampling plan decides as it goes (bench/base/timing.py).
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from bench.base.generate_split import split_lengths
from bench.base.timing import StepTimer


def drive_steps(workload, timer: StepTimer) -> None:
    """A plain loop: `workload.step()` until the timer has every window it needs."""
    timer.begin()
    while timer.lap(workload.step()):
        pass


def drive_generate(workload, timer: StepTimer) -> None:
    """Generate, split into prefill and decode (bench/base/generate_split.py): per step, the whole call in `timer`'s
    window (the published ms/call figure, as the "steps" driver times it), then the one-new-token and partial
    calls in a second timer's windows (`workload.split_timer`), alternating their order step by step. Each timer
    keeps its own warm-up and its own end: the second samples by the same rule on a step's one-token and partial
    calls together (their windows' sum), so neither stops before its own figure is as precise as asked or capped.
    The loop goes on until both have their windows, so the parts are timed interleaved with the whole calls for as
    long as both run, and the machine's drift touches them alike."""
    lengths = split_lengths(workload.shape.new_tokens)
    plan = replace(timer.plan, windows_per_step=len(lengths))
    parts = timer.companion(plan)
    workload.split_timer = parts
    step = 0
    while not (timer.done and parts.done):
        if not timer.done:
            timer.begin()
            timer.end(workload.step())
        if not parts.done:
            for tokens in lengths if step % 2 == 0 else lengths[::-1]:
                parts.begin()
                parts.end(workload.generate(tokens), tag=tokens)
        step += 1


def drive_step_pairs(workload, timer: StepTimer) -> None:
    """StableDiffusion predict: per step, one call at the high and one at the low denoising-step count, each in its
    own window, in alternating order (high-low, low-high, ...) so that neither length always runs right after the
    other. The first step holds both calls' compiles; warm-up pairs follow before any timed pair."""
    high, low = workload.shape.denoise_steps_high, workload.shape.denoise_steps_low
    pair = 0
    timer.begin()
    while True:
        for num_steps in (high, low) if pair % 2 == 0 else (low, high):
            more = timer.lap(workload.call(num_steps), tag=num_steps)
        pair += 1
        if not more:
            return


def drive_keras_fit(workload, timer: StepTimer) -> None:
    model = workload.model
    callback = keras_windows(workload, timer, "train", lambda: setattr(model, "stop_training", True))
    model.fit(workload.data, epochs=1, steps_per_epoch=timer.plan.max_steps, callbacks=[callback], verbose=0)


def drive_keras_predict(workload, timer: StepTimer) -> None:
    model = workload.model
    if getattr(workload, "keras_major", 3) != 2:  # Keras 3 stops predict() on stop_predicting
        callback = keras_windows(workload, timer, "predict", lambda: setattr(model, "stop_predicting", True))
        model.predict(workload.data, steps=timer.plan.max_steps, callbacks=[callback], verbose=0)
        return
    # Keras 2's predict loop has no such flag and would run every one of the plan's most steps (thousands while
    # sampling), untimed. Its loop ends on StopIteration inside the step loop (DataHandler.catch_stop_iteration, how
    # it stops at the end of a finite input), raised here by the callback once the timer is done; the warning it
    # logs then, that the input ran out of data, is not true of this stop and is filtered out.
    def stop() -> None:
        raise StopIteration

    callback = keras_windows(workload, timer, "predict", stop)
    tf_logger = logging.getLogger("tensorflow")
    tf_logger.addFilter(ran_out_of_data := InputRanOutFilter())
    try:
        model.predict(workload.data, steps=timer.plan.max_steps, callbacks=[callback], verbose=0)
    finally:
        tf_logger.removeFilter(ran_out_of_data)


class InputRanOutFilter(logging.Filter):
    """Drops Keras 2's "Your input ran out of data" warning (logged when its predict loop is stopped early)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "ran out of data" not in record.getMessage()


def keras_windows(workload, timer: StepTimer, mode: str, stop: Callable[[], None]):
    """A Keras callback that tiles windows over the loop's batches.

    What the window's closing sync waits for: Keras 3 hands batch-end callbacks its logs already converted to
    NumPy (`pythonify_logs` flattens them, turning every tensor into a host value, which waits for the step), so
    the sync finds host data and has nothing left to wait for; Keras 2 hands over its tensors, and fetching them
    waits for the step. Either way the window closes after the step's work.
    """
    keras = workload.keras

    class StepWindows(keras.callbacks.Callback):
        def _begin(self, batch, logs=None):
            workload.watch_compiles()
            if not timer.is_open and not timer.done:
                timer.begin()  # the first window; later ones are opened by lap()

        def _end(self, batch, logs=None):
            if timer.done:
                return  # a loop that runs a step past the stop is not timed for it
            if not timer.lap(logs if logs else None):
                stop()

    setattr(StepWindows, f"on_{mode}_batch_begin", StepWindows._begin)
    setattr(StepWindows, f"on_{mode}_batch_end", StepWindows._end)
    return StepWindows()


def drive_trainer(workload, timer: StepTimer) -> None:
    """Fit with the transformers Trainer, one tiled window per optimizer step, stopped once the windows are taken."""
    import tempfile

    from transformers import Trainer, TrainerCallback, TrainingArguments

    class StepWindows(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if not timer.is_open and not timer.done:
                timer.begin()

        def on_step_end(self, args, state, control, **kwargs):
            if not timer.lap():
                control.should_training_stop = True

    steps = timer.plan.max_steps
    with tempfile.TemporaryDirectory() as out:
        arguments = dict(
            output_dir=out,
            per_device_train_batch_size=workload.cell.batch_size,
            max_steps=steps,
            report_to=[],
            save_strategy="no",
            logging_strategy="no",
            disable_tqdm=True,
            dataloader_num_workers=0,
            seed=workload.seed,
        )
        arguments.update(workload.trainer_arguments())
        dataset = workload.training_dataset(workload.cell.batch_size * steps)
        training_arguments = TrainingArguments(**arguments)
        refuse_data_parallel(training_arguments.n_gpu)
        Trainer(model=workload.model, args=training_arguments, train_dataset=dataset, callbacks=[StepWindows()]).train()


def refuse_data_parallel(n_gpu: int) -> None:
    """With more than one GPU visible the Trainer wraps the model in DataParallel and multiplies the per-device batch
    by the GPU count, while the cell says one GPU at its batch size: refuse rather than measure another cell. (The
    orchestrator gives every cell exactly one GPU: bench/run/runner.py gpu_environment.)"""
    if n_gpu > 1:
        raise RuntimeError(
            f"the transformers Trainer sees {n_gpu} GPUs and would train on all of them (DataParallel, batch x {n_gpu}); "
            "a cell runs on one GPU: set CUDA_VISIBLE_DEVICES to one GPU (the orchestrator does)"
        )


def pair_difference(windows_ms: list[float], tags: list[Any]) -> list[float]:
    """Per pair of calls, (long - short) / (their step-count gap): what both calls share (a text encoder, a decoder,
    the call's overhead) cancels. The tags are the calls' step counts, so the pair's order does not matter."""
    out = []
    for i in range(0, len(windows_ms) - 1, 2):
        (short, t_short), (long, t_long) = sorted(zip(tags[i : i + 2], windows_ms[i : i + 2]))
        if long == short:
            raise RuntimeError(f"pair {i // 2} has two calls of {long} steps; a pair needs two step counts")
        out.append((t_long - t_short) / (long - short))
    return out


# How a task's timed figures come from its windows, when they are not the windows themselves.
DERIVATIONS: dict[str, Callable[[list[float], list[Any]], list[float]]] = {"pair-difference": pair_difference}

DRIVERS: dict[str, Callable[[Any, StepTimer], None]] = {
    "steps": drive_steps,
    "generate": drive_generate,
    "step-pairs": drive_step_pairs,
    "keras-fit": drive_keras_fit,
    "keras-predict": drive_keras_predict,
    "trainer": drive_trainer,
}


def drive(workload, timer: StepTimer) -> None:
    """Run the workload's task by the driver its task spec declares for its family, until the timer is done."""
    DRIVERS[workload.driver](workload, timer)
    if not timer.done:
        raise RuntimeError(
            f"the {workload.driver!r} driver stopped after {timer.steps_done} steps, before the timer had its windows"
        )

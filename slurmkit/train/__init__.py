"""Job-array trains: long trainings as one ``--array=1-N%1`` array that sources a script.

The recipe of the ML-engineering notes, as a library: submit the array once with the
training script's ``#SBATCH`` header (:mod:`.submit`), let every run source whatever
the ``current`` link points to (switch it between runs: :mod:`.control`), pause and
resume with ``scontrol hold/release``, append runs with a dependent array, stop it
with a kill-switch file anyone in the team can create (:mod:`.killswitch`), and see
where it stands (:mod:`.status`). State lives in a folder per train (:mod:`.state`).

Modules import Jinja2 and the Slurm layer only when used, so ``slurmkit train
should-stop`` stays cheap inside training loops.
"""

from __future__ import annotations

from slurmkit.train.state import DEFAULT_DIR, TrainDir, TrainState, find, root_dir, train_names

__all__ = ["DEFAULT_DIR", "TrainDir", "TrainState", "find", "root_dir", "train_names"]

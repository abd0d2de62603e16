"""Drop-ins for the APIs RL code already logs through, each a thin layer over a face.

Owns ``aoff.tensorboard.SummaryWriter`` (``_writer``, its call-side checks in
``_writer_checks``, its media calls in ``_writer_media``, torch's conventions around the
calls in ``_writer_conventions``), the Stable-Baselines3 logger ``aoff.sb3`` (``_sb3``),
Gymnasium's episode statistics and videos ``aoff.gymnasium`` (``_gym``,
``_gym_video``), TorchRL's logger ``aoff.torchrl`` (``_torchrl``, over the writer),
the JAX door ``aoff.jax`` (``_jax``: one host callback per call under ``vmap``),
Tianshou's logger ``aoff.tianshou`` (``_tianshou``, over the writer), Ray Tune's logger
callback ``aoff.ray.TuneCallback`` (``_tune``, one writer a trial), RLlib's episode
statistics callback ``aoff.ray.EpisodeStats`` (``_rllib``), rsl_rl's writer plug-in and
its episode bookkeeping ``aoff.rsl_rl`` (``_rsl_rl``, over the writer) and the
device-side episode statistics ``aoff.torch.EpisodeStats`` (``_episodes``).
The public modules at the top of the package re-export from here; the adapters' own
third-party imports (stable_baselines3, wandb, torchrl, tianshou, ray.tune, ray.rllib,
rsl_rl, torch) stay inside them, so ``import aoff`` never pays for them.

May import: ``_faces`` (an adapter drives a logger like a user does), ``_pump`` (its
options' types), ``_display``, ``_runfolder`` (Tianshou's ``restore_data`` reads a run
with aoff's reader), ``_media`` (``SummaryWriter``'s image, video and figure checks),
``_core``. Nothing inside aoff imports it but the public modules.
"""

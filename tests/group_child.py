"""A run group with the rich table on a pty (``test_group.py``): logs for about a second."""

import sys
import time

import numpy as np

import aoff

group = aoff.RunGroup(3, sys.argv[1], name="g", display="rich", system_interval=0)
for i in range(40):
    group.log_step(i, {"loss": np.array([1.0, 2.0, 3.0]) + i})
    time.sleep(0.03)  # a run that lasts long enough for several frames
group.finish()

"""scripts/hw_host_split.py - the measured host time per step of an executed run, as the multi-instance
study takes it (issue 11; experiments/hw_multi_instance.lua's measured_host is the Lua side of the same
rule): the GPU's idle time between two consecutive steps, start_s[j+1] - start_s[j] - compute_s[j], over
the pairs where the engine did not wait for work (0 <= idle < compute_s[j]), split into the engine's
planning (host_plan_s) and the rest (the release, >= 0, as the simulated halves take it).

    from hw_host_split import host_split
    plan_s, release_s = host_split(h5_run["steps"][()])     # None when no pair qualifies
"""
import numpy as np


def host_split(steps):
    st = np.sort(steps, order="start_s")
    idle = st["start_s"][1:] - st["start_s"][:-1] - st["compute_s"][:-1]
    ok = (idle >= 0) & (idle < st["compute_s"][:-1])
    if not ok.any():
        return None
    plan = float(np.mean(st["host_plan_s"][:-1][ok]))
    return plan, max(0.0, float(np.mean(idle[ok])) - plan)

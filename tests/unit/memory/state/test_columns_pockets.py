"""`in_pockets`: the plan's pockets among a pocket column, each row read once."""

from __future__ import annotations

import numpy as np

from server.core.memory.state.columns import in_pockets


def test_rows_in_the_plans_pockets_and_no_others() -> None:
    column = np.array([-1, 0, 1, 2, 3, 7, 42, -2], dtype=np.int32)
    assert in_pockets(column, [1, 3]).tolist() == [
        False, False, True, False, True, False, False, False,
    ]  # fmt: skip
    assert in_pockets(column, [0]).tolist() == [False, True, *[False] * 6]  # -1 is no row
    assert not in_pockets(column, []).any()


def test_a_pocket_newer_than_the_plan_is_not_in_it() -> None:
    """A row the writer moved meanwhile to a pocket made after the plan (an id past every
    pocket of the plan) reads as outside it, with no error."""
    column = np.array([5, 1000], dtype=np.int32)
    assert in_pockets(column, [5]).tolist() == [True, False]


def test_rows_moved_while_the_mask_is_read_never_break_it() -> None:
    """A writer moves rows between pockets (without a lock, as a tier change does) while a
    Recall masks the column: the mask reads a copy, never an error."""
    import threading

    column = np.zeros(50_000, dtype=np.int32)
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            column[i % len(column)] = 9_000 if column[i % len(column)] == 0 else 0
            i += 7919

    t = threading.Thread(target=writer)
    t.start()
    try:
        for _ in range(30):
            in_pockets(column, [0, 1])
    finally:
        stop.set()
        t.join()

"""Sessions appended to one text log, read as one run in file order (`Sessions`)."""

from __future__ import annotations


class Sessions:
    """The sessions appended to one text log: its step counts up, then goes back to the file's
    first step, again and again (a script run again with its log opened for appending — the
    CS230 template's `train.log`, ~20 sessions over a year in one file). Such a file is one run
    read in file order: each session's steps count on from the previous session's last, so the
    run's last point is the file's last record. A file whose step goes back anywhere else (a
    resume from a checkpoint) or never counts up between (one best epoch per block:
    `best_res.txt`) keeps its steps as written."""

    def __init__(self) -> None:
        self.spans: list[list[float]] = []  # per session: its first and last step as written
        self.rose = False  # the step went up since the session began
        self.appended = True  # every step back so far was a session's start
        self.stride = 0.0  # the smallest rise between two steps of a session

    @property
    def current(self) -> int:
        return max(0, len(self.spans) - 1)

    def see(self, step: float) -> None:
        """One step as written, in file order."""
        if not self.spans:
            self.spans.append([step, step])
            return
        previous = self.spans[-1][1]
        if step > previous:
            self.rose = True
            self.stride = min(self.stride, step - previous) if self.stride else step - previous
        elif step < previous:
            if step <= self.spans[0][0] and self.rose:
                self.spans.append([step, step])
                self.rose = False
                return
            self.appended = False
        self.spans[-1][1] = step

    def shifts(self) -> list[float] | None:
        """What each session's steps gain to count on from the one before; None when the file
        is not appended sessions."""
        if len(self.spans) < 2 or not self.appended:
            return None
        out, end = [0.0], self.spans[0][1]
        for first, last in self.spans[1:]:
            out.append(end + 1 - first)
            end = last + out[-1]
        return out

    def period_shifts(self, total: int | None) -> list[float] | None:
        """When the step is written `N/total` and wraps like a counter modulo `total` — each
        session but the last ends within one logging stride of `total`, each after the first
        starts within one stride of 0 — the sessions are the passes of an outer loop
        (ChineseNER's `iteration:2 step:56/1044` follows `iteration:1 step:1000/1044`: the
        global step modulo the iteration's steps): session k's steps are k·total on. Sessions
        that stop short of the total (launches stopped early: CS230's `Epoch 59/100`, then
        `Epoch 1/100`) are no such passes. None otherwise."""
        if not total or len(self.spans) < 2 or not self.appended or not self.stride:
            return None
        full = all(total - last <= self.stride and last <= total for _f, last in self.spans[:-1])
        wrapped = all(first <= self.stride for first, _l in self.spans[1:])
        if not (full and wrapped) or self.spans[-1][1] > total:
            return None
        return [float(k * total) for k in range(len(self.spans))]

    def describe_period(self, name: str, step_key: str, total: int) -> str:
        return (f"{name}: {step_key} is written N/{total} and starts again {len(self.spans) - 1} "
                f"time(s): the passes of an outer loop, so x = {step_key} + {total} × the pass "
                f"(0-based) — {len(self.spans)} passes of {total} steps")

    def describe(self, name: str, step_key: str, shifts: list[float]) -> str:
        starts = [f[0] + d for f, d in zip(self.spans[1:], shifts[1:], strict=True)]
        shown = ", ".join(_num(x) for x in starts[:5]) + (" …" if len(starts) > 5 else "")
        return (f"{name}: {len(self.spans)} sessions appended to one file ({step_key} back at "
                f"{_num(self.spans[0][0])} {len(starts)} time(s)): read as one run in file "
                f"order, each session's {step_key} counted on from the previous session's last "
                f"(sessions 2… start at step {shown})")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)

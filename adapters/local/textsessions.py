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

    def describe(self, name: str, step_key: str, shifts: list[float]) -> str:
        starts = [f[0] + d for f, d in zip(self.spans[1:], shifts[1:], strict=True)]
        shown = ", ".join(_num(x) for x in starts[:5]) + (" …" if len(starts) > 5 else "")
        return (f"{name}: {len(self.spans)} sessions appended to one file ({step_key} back at "
                f"{_num(self.spans[0][0])} {len(starts)} time(s)): read as one run in file "
                f"order, each session's {step_key} counted on from the previous session's last "
                f"(sessions 2… start at step {shown})")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)

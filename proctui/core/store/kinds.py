"""The kinds of journal entries: one fixed set, so that the timeline, the summaries and
scripts reading journal.jsonl can rely on them (a kind is written as its value)."""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    BEGIN = "begin"  # proctui started: its pid and the processes
    END = "end"  # proctui is closing
    SHUTDOWN = "shutdown"  # everything is stopping, and why (quit key, SIGTERM, down, ...)
    START = "start"  # a run was spawned
    WAITING = "waiting"  # a process waits for its dependencies
    READY = "ready"  # a run became ready
    NOTIFY = "notify"  # what a run said over sd_notify (chatter: coalesced)
    NOTIFY_DROPPED = "notify-dropped"  # datagrams dropped, by reason, when a socket closed
    NOTICE = "notice"  # a line of proctui's own about itself
    STAGE = "stage"  # a stop waits for the processes that depend on it
    STOP = "stop"  # the stop signal is about to be sent
    SIGNAL = "signal"  # a signal was sent
    DEADLINE = "deadline"  # the current deadline was set or moved
    EXTEND = "extend"  # someone moved the deadline (operator or process)
    DECISION = "decision"  # the operator's kill, abandon or wait, or extend at a question
    COMMAND = "command"  # a command over the control socket, and who sent it (uid, ssh)
    ASK = "ask"  # an agent asks for a decision only an operator takes; who, and why
    ANSWER = "answer"  # what became of such a request: granted or denied (and by whom),
    # expired, or moot (its process ended, everything began to stop)
    OUTCOME = "outcome"  # how a run ended
    ALL_ENDED = "all-ended"  # nothing runs any more after a shutdown; the exit status
    RELOAD = "reload"  # the config was read again: what was added, removed, changed
    STOP_COMMAND = "stop-command"  # a run's stop command started, or how it ended
    JOURNAL_GAP = "journal-gap"  # entries not written (a full disk): how many, and why
    JOURNAL_FULL = "journal-full"  # the file reached its size: nothing more is written
    CHATTER_FULL = "journal-chatter-full"  # only entries that matter are written from here

"""Every request of the control protocol in one namespace, for tests that speak it (the
command table's modules and the link's own requests)."""

from proctui.commands.abandon import Abandon
from proctui.commands.abandon_all import AbandonAll
from proctui.commands.adopt import Adopt
from proctui.commands.base import Command, Named, Request
from proctui.commands.clear import Clear
from proctui.commands.event_log import ReadEvents
from proctui.commands.extend import Extend
from proctui.commands.interactive import SetInteractive
from proctui.commands.interrupt import Interrupt
from proctui.commands.journal_read import ReadJournal
from proctui.commands.kill import Kill
from proctui.commands.kill_all import KillAll
from proctui.commands.reload import Reload
from proctui.commands.restart import Restart
from proctui.commands.start import Start
from proctui.commands.stop import Stop
from proctui.commands.stop_all import StopAll
from proctui.commands.usage import WantUsage
from proctui.commands.wait import Wait
from proctui.core.reply import Done, EventsPage, Fault, JournalPage, failed
from proctui.protocol.link import Ack, Greet, Ping, Tail, Via, Watch
from proctui.protocol.replies import TailPage

Hello = Greet
Journal = ReadJournal
CoreCommand = Command

__all__ = ["Abandon", "AbandonAll", "Ack", "Adopt", "Clear", "Command", "CoreCommand", "Done",
           "EventsPage", "Extend", "Fault", "Greet", "Hello", "Interrupt", "Journal",
           "JournalPage", "Kill", "KillAll", "Named", "Ping", "ReadEvents", "ReadJournal",
           "Reload", "Request", "Restart", "SetInteractive", "Start", "Stop", "StopAll",
           "Tail", "TailPage", "Via", "Wait", "WantUsage", "Watch", "failed"]

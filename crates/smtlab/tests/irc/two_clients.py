#!/usr/bin/env python3
"""Two clients of the Python `irc` library (jaraco's) against an IRC server.

Usage: two_clients.py HOST:PORT

Both register (the library reads the 005 line), join one channel, list it
with WHO, exchange channel and private messages (one of them not ASCII),
ask the server for a PONG; one changes its nick (the other sees the NICK,
and the library itself follows its new nick), then both quit (the other
sees the first QUIT). Every step waits for what
it should bring, with a timeout, and the first thing that does not arrive
ends the script with exit 1 and one line naming it and what did arrive.

It is a client implementation other than smtlab's own: it parses the
server's prefixes and numerics its own way, which is the point.
"""

import sys
import time

import irc.client

TIMEOUT = 10.0
CHANNEL = "#lab"


class Missing(Exception):
    pass


class Client:
    """One connection and everything it received, as (type, nick, target,
    arguments)."""

    def __init__(self, reactor, name, host, port):
        self.name = name
        self.events = []
        self.conn = reactor.server()
        self.conn.add_global_handler("all_events", self.record, -100)
        self.conn.connect(host, port, name, username=name, ircname=name)

    def record(self, conn, event):
        # The raw lines come again as the events they parse into.
        if conn is not self.conn or event.type == "all_raw_messages":
            return
        source = irc.client.NickMask(event.source or "").nick if event.source else ""
        self.events.append((event.type, source, event.target, list(event.arguments)))

    def seen(self):
        return ", ".join(
            "%s from %s to %s %r" % (t, s or "-", g or "-", a) for t, s, g, a in self.events
        )


class Session:
    def __init__(self, host, port):
        # irc 8.x calls the reactor IRC; later versions Reactor.
        factory = getattr(irc.client, "Reactor", None) or irc.client.IRC
        self.reactor = factory()
        self.host = host
        self.port = port

    def connect(self, name):
        return Client(self.reactor, name, self.host, self.port)

    def expect(self, client, what, match):
        """Runs the reactor until `client` received an event `match` accepts
        (it is consumed); raises Missing naming `what` after TIMEOUT."""
        until = time.monotonic() + TIMEOUT
        while True:
            for i, ev in enumerate(client.events):
                if match(*ev):
                    del client.events[: i + 1]
                    return ev
            closed = any(ev[0] == "disconnect" for ev in client.events)
            left = until - time.monotonic()
            if closed or left <= 0:
                why = "before its connection was closed" if closed else (
                    "within %.0f s" % TIMEOUT)
                raise Missing(
                    "%s did not receive %s %s; it received: %s"
                    % (client.name, what, why, client.seen() or "nothing")
                )
            self.reactor.process_once(min(left, 0.05))


def host_of(client):
    """The host the server shows for a client: the address it connects
    from, which is the one the server listens on here (loopback)."""
    return client.conn.socket.getsockname()[0]


def run(s):
    ann = s.connect("ann")
    ben = s.connect("ben")
    for c in (ann, ben):
        s.expect(c, "the welcome (001)", lambda t, *_: t == "welcome")
        # ISUPPORT (005): the library reads its tokens into `features`.
        s.expect(c, "the ISUPPORT line (005)", lambda t, *_: t == "featurelist")
        features = c.conn.features
        nicklen = getattr(features, "nicklen", None)
        if not isinstance(nicklen, int) or "#" not in getattr(features, "chantypes", ""):
            raise Missing("%s did not read NICKLEN as a number and CHANTYPES with # "
                          "from the ISUPPORT line (005): %r" % (c.name, vars(features)))

    ann.conn.join(CHANNEL)
    s.expect(ann, "its own JOIN of " + CHANNEL,
             lambda t, n, g, a: t == "join" and n == "ann" and g == CHANNEL)
    s.expect(ann, "the end of NAMES (366) of " + CHANNEL,
             lambda t, n, g, a: t == "endofnames")
    ben.conn.join(CHANNEL)
    s.expect(ben, "NAMES (353) of %s listing ann and ben" % CHANNEL,
             lambda t, n, g, a: t == "namreply" and a[1] == CHANNEL
             and set(a[2].split()) == {"ann", "ben"})
    s.expect(ann, "ben's JOIN of " + CHANNEL,
             lambda t, n, g, a: t == "join" and n == "ben" and g == CHANNEL)

    # WHO: each member as the other sees it in messages (user, host,
    # nick), with the real name it registered.
    ben.conn.who(CHANNEL)
    for nick in ("ann", "ben"):
        s.expect(ben, "WHO (352) of %s naming %s as %s!%s@%s, real name %s"
                 % (CHANNEL, nick, nick, nick, host_of(ben), nick),
                 lambda t, n, g, a, nick=nick: t == "whoreply" and a[0] == CHANNEL
                 and a[4] == nick and a[1] == nick and a[2] == host_of(ben)
                 and a[-1].split(" ", 1)[1:] == [nick])
    s.expect(ben, "the end of WHO (315)", lambda t, *_: t == "endofwho")

    ann.conn.privmsg(CHANNEL, "hello from ann")
    s.expect(ben, "ann's channel message",
             lambda t, n, g, a: t == "pubmsg" and n == "ann" and g == CHANNEL
             and a == ["hello from ann"])
    text = "h\u00e9 ben, \u2713 \u00fcber"
    ben.conn.privmsg(CHANNEL, text)
    s.expect(ann, "ben's channel message (UTF-8) unchanged",
             lambda t, n, g, a: t == "pubmsg" and n == "ben" and a == [text])

    ann.conn.privmsg("ben", "private to ben")
    s.expect(ben, "ann's private message",
             lambda t, n, g, a: t == "privmsg" and n == "ann" and g == "ben"
             and a == ["private to ben"])
    ben.conn.privmsg("ann", "private to ann")
    s.expect(ann, "ben's private message",
             lambda t, n, g, a: t == "privmsg" and n == "ben" and g == "ann"
             and a == ["private to ann"])

    ann.conn.ping("token-1")
    s.expect(ann, "a PONG carrying its token",
             lambda t, n, g, a: t == "pong" and "token-1" in a)

    ann.conn.nick("anna")
    s.expect(ben, "ann's NICK to anna",
             lambda t, n, g, a: t == "nick" and n == "ann" and g == "anna")
    s.expect(ann, "its own NICK to anna",
             lambda t, n, g, a: t == "nick" and n == "ann" and g == "anna")
    if ann.conn.get_nickname() != "anna":
        raise Missing("ann's library still calls it %r after the NICK"
                      % ann.conn.get_nickname())
    ben.conn.privmsg("anna", "to the new nick")
    s.expect(ann, "a private message to its new nick",
             lambda t, n, g, a: t == "privmsg" and n == "ben" and g == "anna")
    ann.conn.privmsg(CHANNEL, "renamed")
    s.expect(ben, "a channel message from anna",
             lambda t, n, g, a: t == "pubmsg" and n == "anna" and a == ["renamed"])

    ann.conn.quit("bye")
    s.expect(ben, "anna's QUIT with her reason",
             lambda t, n, g, a: t == "quit" and n == "anna"
             and any("bye" in x for x in a))
    s.expect(ann, "the end of its connection after QUIT",
             lambda t, *_: t == "disconnect")
    ben.conn.quit()
    s.expect(ben, "the end of its connection after QUIT",
             lambda t, *_: t == "disconnect")


def main():
    if len(sys.argv) != 2 or ":" not in sys.argv[1]:
        print("usage: two_clients.py HOST:PORT", file=sys.stderr)
        return 2
    host, port = sys.argv[1].rsplit(":", 1)
    try:
        run(Session(host, int(port)))
    except Missing as e:
        print("two_clients: " + str(e), file=sys.stderr)
        return 1
    except irc.client.ServerConnectionError as e:
        print("two_clients: cannot connect to %s: %s" % (sys.argv[1], e), file=sys.stderr)
        return 1
    print("two_clients: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())

package nemesis

import (
	"context"

	"github.com/lockbench/lockbench/locks"
)

// reply-lost loses the reply to a request the lock service applied: it
// waits for a client to hold at the point where such a reply has reached
// its socket, proves from inside the client's container that it is held
// there, and lets it go on at once; the client then resets its connection
// without reading the reply, as when a link fails after the request was
// delivered. The request's effect stays on the service (in ZooKeeper's
// recipe, a sequential znode of the client's session) while the client
// cannot know it: ZOOKEEPER-1262, which Curator's protection mode answers.
// It needs no capability: the client drops its own connection.
var replyLostKind = Kind{Name: ReplyLost, Point: locks.FailReplyHeld,
	Needs: needsLock(ReplyLost, "no request to lose the reply of"),
	New: func(_ context.Context, e Env) Fault {
		return newPointFault(ReplyLost, "failpoint "+locks.FailReplyHeld, true, e, locks.FailReplyHeld)
	},
}

// ReplyLost is the fault's name.
const ReplyLost = "reply-lost"

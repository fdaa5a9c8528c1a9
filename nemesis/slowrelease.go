package nemesis

import (
	"context"

	"github.com/lockbench/lockbench/locks"
)

// slow-release holds a holder's release for the fault's duration, at the
// moment the request that deletes its key is about to go out (after the
// ownership check of a client that checks in a separate round trip): the
// delayed unlock that lands after the lease expired and another client
// took the lock. The client's renewals have stopped by then, as they do
// when a release begins, so only a release that checks ownership in the
// same step as the delete is harmless.
var slowReleaseKind = Kind{Name: SlowRelease, Outlived: true, Point: locks.FailBeforeDelete,
	Needs: needsLock(SlowRelease, "no release to delay"),
	New: func(_ context.Context, e Env) Fault {
		return newPointFault(SlowRelease, "delayed "+locks.FailBeforeDelete, false, e, locks.FailBeforeDelete)
	},
}

// SlowRelease is the fault's name.
const SlowRelease = "slow-release"

package locks

import (
	"errors"

	"github.com/go-zookeeper/zk"
)

// CreateRetry is the known-broken ZooKeeper lock client: it creates its
// sequential znode again when the connection is lost during the create,
// without a protected name to find the first one by. A create the
// ensemble applied but whose reply was lost leaves a znode of the client's
// own session in line; the client waits behind it as if it were another
// contender's, and so does everyone else, for as long as the session
// lives, which the client keeps alive: ZOOKEEPER-1262, the reason for
// Curator's protection mode and for go-zookeeper's
// CreateProtectedEphemeralSequential, whose loop this is without the
// protection. To retry at all it rides out a disconnection on the
// library's reconnect, as go-zookeeper's own Lock does, where the correct
// client takes it for the loss of the lock (Curator's TN14).
const CreateRetry = "create-retry"

// zkCreateTries is how often the variant tries, as
// CreateProtectedEphemeralSequential does.
const zkCreateTries = 3

// createRetrying creates the contender's znode, again after a lost
// connection, as if the lost attempt had created nothing.
func (z *ZooKeeper) createRetrying(s *zkSession) (me string, err error) {
	for range zkCreateTries {
		me, err = z.create(s)
		if !errors.Is(err, zk.ErrConnectionClosed) {
			return me, err
		}
	}
	return me, err
}

package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/lockbench/lockbench/history"
)

var killClientKind = Kind{Name: history.KillClient, Strikes: true,
	Needs: needsLock(history.KillClient, "no lock left behind to expire"),
	New: func(_ context.Context, e Env) Fault {
		return &KillClient{Cluster: e.Cluster, Holders: e.Holders, Clients: e.Topology.Clients, Failpoint: e.Failpoint}
	},
}

// KillClient SIGKILLs the lock holder, as a crash or the OOM killer would:
// its lock must expire by its TTL, or no one gets it again. With a
// Failpoint it kills whichever client first reaches that point of its code
// instead (between SETNX and EXPIRE, say). A killed client stays dead for
// the rest of the run: a new process under the same name would be another
// client, and its history would not pair with the old one's.
type KillClient struct {
	Cluster   Cluster
	Holders   Holders
	Clients   []string
	Failpoint string

	mu sync.Mutex
	s  *striker
}

// Name implements Fault.
func (k *KillClient) Name() string { return history.KillClient }

// Lasts implements Lasting: a kill is over once it is done; what it left
// behind (a lock nobody will release) is what the run is there to see.
func (k *KillClient) Lasts(time.Duration) time.Duration { return 0 }

// Inject implements Fault.
func (k *KillClient) Inject(ctx context.Context, r *rand.Rand) (Injection, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	target, shape, err := strikeOrHolder(ctx, &k.s, k.Cluster, k.Holders, k.Clients, k.Failpoint)
	if err != nil {
		return Injection{}, err
	}
	if err := k.Cluster.Signal(ctx, target, "SIGKILL"); err != nil {
		return Injection{}, err
	}
	return Injection{Shape: shape, Targets: []string{target}}, nil
}

// Heal implements Fault: the dead stay dead; an armed failpoint that no
// client reached is disarmed.
func (k *KillClient) Heal(ctx context.Context) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.s == nil {
		return nil
	}
	return k.s.disarm(ctx)
}

// strikeOrHolder finds the client a client fault acts on: the one that
// reaches failpoint, when one is asked for, else the lock holder. On
// failure it leaves no failpoint armed.
func strikeOrHolder(ctx context.Context, s **striker, c Cluster, h Holders, clients []string, failpoint string) (string, string, error) {
	if failpoint == "" {
		holder, err := h.WaitHolder(ctx)
		if err != nil {
			return "", "", fmt.Errorf("%w: %w", ErrNoTarget, err)
		}
		return holder, TargetHolder, nil
	}
	if *s == nil {
		*s = &striker{cluster: c, holders: h, clients: clients, point: failpoint}
	}
	target, err := (*s).strike(ctx)
	if err != nil {
		dctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if derr := (*s).disarm(dctx); derr != nil {
			return "", "", fmt.Errorf("%w (and disarming: %w)", err, derr)
		}
		return "", "", err
	}
	return target, "failpoint " + failpoint, nil
}

package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// PowerLossFault is the power-loss fault's name: a run that asks for it
// serves its service nodes' data directories from the lockbench disk that
// can lose what was never fsynced (OnDisk), and its servers fsync as they
// would on a real disk.
const PowerLossFault = "power-loss"

// Power-loss targets: how many service nodes lose power at once.
const (
	PowerOne      = "one"
	PowerMajority = "majority"
	PowerAll      = "all" // a datacenter outage
)

// cutWait bounds how long a cut waits for the server's next fsync: a
// quarter of the TTL, so that it falls while the lease of the grant it
// follows is still certainly valid (a later cut could only forget a lease
// that was running out anyway); at most 1.5 s, as the longest any fsync
// policy here leaves writes unsynced is Redis's everysec, one second.
func cutWait(ttl time.Duration) time.Duration { return min(1500*time.Millisecond, ttl/4) }

var powerLossKind = Kind{Name: PowerLossFault, Disk: true, Service: true,
	Needs: func(t Topology) string {
		if len(t.Disks) == 0 {
			return "has no data directory on disk for power-loss to take writes from"
		}
		return ""
	},
	New: func(ctx context.Context, e Env) Fault {
		p := &PowerLoss{Cluster: e.Cluster, Holders: e.Holders, Nodes: e.Topology.Disks, Target: e.PowerTarget,
			RestartDelay: e.RestartDelay, Wait: cutWait(e.TTL)}
		p.setup = p.syncAll(ctx)
		return p
	},
}

// OnDisk is a server's command run by the node's powerfs agent, which
// serves dataDir from its disk and runs the server as its child; name
// tells the mount apart in the mount table.
func OnDisk(cmd []string, dataDir, name string) []string {
	return append([]string{"lockbench", "powerfs", "--mount", dataDir, "--name", name, "--"}, cmd...)
}

// PowerLoss cuts the power of service nodes: the server process is killed
// (its disk's agent lives on), every write it never fsynced is taken back,
// and it starts again after RestartDelay. Unlike kill, which leaves
// unsynced writes in the page cache, this is what an outage does.
//
// It waits for a grant of the lock and cuts each node's power at its
// server's next fsync: the moment when the most is unsynced, so that the
// grant is lost unless the fsync policy made it durable before the cut
// was set (an fsync between the grant and the few milliseconds the
// harness takes to learn of it).
type PowerLoss struct {
	Cluster      Cluster
	Holders      Holders
	Nodes        []string
	Target       string // PowerOne, PowerMajority or PowerAll (default)
	RestartDelay time.Duration
	// Wait bounds how long a cut waits for a node's next fsync.
	Wait time.Duration

	// setup is why the disks could not be made durable before the run.
	setup error

	mu  sync.Mutex
	cut map[string]bool
	// cutAt is when the last cut was made.
	cutAt time.Time
}

// syncAll makes what the servers wrote while starting durable, as the
// kernel's writeback would have long before a real service took its first
// lock: the fault is about writes made under load, not about a service's
// first second.
func (p *PowerLoss) syncAll(ctx context.Context) error {
	for _, n := range p.Nodes {
		if _, err := p.Cluster.Exec(ctx, n, "lockbench", "power", "sync"); err != nil {
			return fmt.Errorf("sync the disk of %s: %w", n, err)
		}
	}
	return nil
}

// Name implements Fault.
func (p *PowerLoss) Name() string { return PowerLossFault }

// Lasts implements Lasting: a node without power stays down for the
// restart delay.
func (p *PowerLoss) Lasts(time.Duration) time.Duration { return p.RestartDelay }

func (p *PowerLoss) targets(r *rand.Rand) []string {
	switch p.Target {
	case PowerOne:
		return pick(r, p.Nodes, 1)
	case PowerMajority:
		return majority(r, p.Nodes)
	default:
		return pick(r, p.Nodes, len(p.Nodes))
	}
}

// Inject implements Fault.
func (p *PowerLoss) Inject(ctx context.Context, r *rand.Rand) (Injection, error) {
	if p.setup != nil {
		return Injection{}, p.setup
	}
	targets := p.targets(r)
	if _, err := p.Holders.WaitGrant(ctx); err != nil {
		return Injection{}, fmt.Errorf("%w: %w", ErrNoTarget, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut == nil {
		p.cut = map[string]bool{}
	}
	// The grant decided the cut: it is made and recorded even if the run
	// ends meanwhile, or a node would be down with no record of why.
	ctx = context.WithoutCancel(ctx)
	p.cutAt = time.Now()
	// All at once: each node's power fails at its own server's next fsync.
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, n := range targets {
		p.cut[n] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = p.Cluster.Exec(ctx, n, "lockbench", "power", "off", "--wait", p.Wait.String())
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Injection{}, err
	}
	shape := p.Target
	if shape == "" {
		shape = PowerAll
	}
	return Injection{Shape: shape, Targets: targets}, nil
}

// Heal implements Fault. A node stays down for the restart delay even
// when the run ends sooner: a delay cut short would be the fault that
// antirez's remedy is about, not the remedy.
func (p *PowerLoss) Heal(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.cut) > 0 {
		sleep(ctx, time.Until(p.cutAt.Add(p.RestartDelay)))
	}
	return healEach(p.cut, func(n string) error {
		_, err := p.Cluster.Exec(ctx, n, "lockbench", "power", "on")
		return err
	})
}

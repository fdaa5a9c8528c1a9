package nemesis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockbench/lockbench/link"
)

// LinkFault is the name of the fault that makes client links slow or lossy.
const LinkFault = "link"

var linkKind = Kind{Name: LinkFault, Strikes: true, Targets: ClientTargets, Service: true,
	// The proxies need nothing of the kernel; loss is a firewall rule.
	NetAdminFor: func(l LinkEnv) bool { return slices.Contains(l.Shapes, link.Loss) },
	// Every run has clients and links to strike, a store's at least.
	Needs: func(Topology) string { return "" },
	New: func(_ context.Context, e Env) Fault {
		return &Link{Cluster: e.Cluster, Topology: e.Topology, Holders: e.Holders, Target: e.Target,
			Failpoint: e.Failpoint, Shapes: e.Link.Shapes, Path: e.Link.Path, Delay: e.Link.Delay}
	},
}

// LinkEnv is what a link fault is shaped by (--link, --link-path,
// --link-delay).
type LinkEnv struct {
	Shapes []string
	Path   string
	Delay  time.Duration
}

// LossProbability is the share of packets a lossy link drops each way:
// enough that most requests of a few packets lose one and wait for TCP to
// send it again, not so much that every connection stalls.
const LossProbability = 0.3

// lossChain holds a lossy link's rule in a client's network namespace, so
// that its counters say how many packets it dropped.
const lossChain = "lockbench-loss"

// Link strikes clients' links (package link): a shape of Shapes on the
// paths Path of the clients Target names. Each client keeps its proxies in
// its own process; the nemesis shapes them with `lockbench link` run
// inside the client's container, and makes loss with iptables there.
type Link struct {
	Cluster  Cluster
	Topology Topology
	Holders  Holders
	Target   string
	// Failpoint, when set, strikes the first client to reach that point
	// of its code instead of a Target, and lets it go on once its links
	// are shaped: at workloads.FailSection (read done, write ahead) a
	// delay holds the write, not the read.
	Failpoint string
	Shapes    []string
	Path      string
	Delay     time.Duration

	mu     sync.Mutex
	struck map[string]bool
	lossy  map[string]bool
	s      *striker
}

// Name implements Fault.
func (l *Link) Name() string { return LinkFault }

// Inject implements Fault.
func (l *Link) Inject(ctx context.Context, r *rand.Rand) (Injection, error) {
	shape := l.Shapes[r.IntN(len(l.Shapes))]
	l.mu.Lock()
	defer l.mu.Unlock()
	var targets []string
	if l.Failpoint != "" {
		target, _, err := strikeOrHolder(ctx, &l.s, l.Cluster, l.Holders, l.Topology.Clients, l.Failpoint)
		if err != nil {
			return Injection{}, err
		}
		targets = []string{target}
	} else {
		var err error
		if targets, err = aim(ctx, r, l.Holders, l.Topology.Clients, l.Target); err != nil {
			return Injection{}, err
		}
	}
	if shape == link.Loss {
		rules, err := l.lossRules(ctx)
		if err != nil {
			return Injection{}, err
		}
		err = hitEach(&l.lossy, targets, func(t string) error {
			_, err := l.Cluster.Exec(ctx, t, "sh", "-c", rules)
			return err
		})
		if err != nil {
			return Injection{}, fmt.Errorf("lossy link: %w", err)
		}
	} else {
		err := hitEach(&l.struck, targets, func(t string) error {
			_, err := l.Cluster.Exec(ctx, t, "lockbench", "link", "set", shape, "--path", l.Path, "--delay", l.Delay.String())
			return err
		})
		if err != nil {
			return Injection{}, fmt.Errorf("link %s: %w", shape, err)
		}
	}
	how := shape + " " + l.Path
	if l.s != nil {
		// Shaped: the client held at its failpoint goes on into them.
		if err := l.s.disarm(ctx); err != nil {
			return Injection{}, err
		}
		how += " at failpoint " + l.Failpoint
	}
	return Injection{Shape: how, Targets: targets}, nil
}

// servers are the nodes on the fault's path: the lock service's and the
// store's.
func (l *Link) servers() []string {
	var out []string
	if l.Path != link.Store {
		out = append(slices.Clone(l.Topology.Service), l.Topology.Sentinels...)
	}
	if l.Path != link.Lock && l.Topology.Store != "" {
		out = append(out, l.Topology.Store)
	}
	return out
}

// lossRules is the script that makes a client's links to the path's
// servers lossy both ways.
func (l *Link) lossRules(ctx context.Context) (string, error) {
	rules := []string{"iptables -w -N " + lossChain,
		fmt.Sprintf("iptables -w -A %s -m statistic --mode random --probability %s -j DROP", lossChain, strconv.FormatFloat(LossProbability, 'f', -1, 64))}
	for _, n := range l.servers() {
		ip, err := l.Cluster.IP(ctx, n)
		if err != nil {
			return "", err
		}
		rules = append(rules, "iptables -w -I INPUT -s "+ip+" -j "+lossChain, "iptables -w -I OUTPUT -d "+ip+" -j "+lossChain)
	}
	return strings.Join(rules, " && "), nil
}

// Measure implements Measured: what the clients struck say of their links
// just before the heal, read from inside their containers (the toxics each
// proxy has; the packets a lossy link dropped).
func (l *Link) Measure(ctx context.Context) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, t := range sortedSet(l.lossy) {
		// -x: exact counts; the first rule of the chain is the drop.
		n, err := l.Cluster.Exec(ctx, t, "sh", "-c", "iptables -w -L "+lossChain+" -v -x -n | awk 'NR==3 {print $1}'; "+
			"iptables -w -L INPUT -v -x -n | awk '$3==\""+lossChain+"\" {s+=$1} END {print s+0}'; "+
			"iptables -w -L OUTPUT -v -x -n | awk '$3==\""+lossChain+"\" {s+=$1} END {print s+0}'")
		if err != nil {
			out = append(out, t+": "+err.Error())
			continue
		}
		f := strings.Fields(n)
		if len(f) == 3 {
			in, _ := strconv.Atoi(f[1])
			o, _ := strconv.Atoi(f[2])
			out = append(out, fmt.Sprintf("%s: dropped %s of %d packets", t, f[0], in+o))
		}
	}
	for _, t := range sortedSet(l.struck) {
		shown, err := l.Cluster.Exec(ctx, t, "lockbench", "link", "show")
		if err != nil {
			shown = err.Error()
		}
		out = append(out, t+": "+oneLine(shown))
	}
	return strings.Join(out, "; ")
}

// Heal implements Fault.
func (l *Link) Heal(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var disarmErr error
	if l.s != nil {
		disarmErr = l.s.disarm(ctx)
	}
	err := healEach(l.struck, func(t string) error {
		_, err := l.Cluster.Exec(ctx, t, "lockbench", "link", "clear")
		return err
	})
	// A partition's heal may have flushed the jumps already; the chain
	// goes either way.
	lossErr := healEach(l.lossy, func(t string) error {
		_, err := l.Cluster.Exec(ctx, t, "sh", "-c", "for c in INPUT OUTPUT; do "+
			"iptables -w -S $c | grep -e '-j "+lossChain+"$' | sed 's/^-A/iptables -w -D/' | sh; done; "+
			"iptables -w -F "+lossChain+" 2>/dev/null; iptables -w -X "+lossChain+" 2>/dev/null; "+
			"! iptables -w -S | grep -q -e "+lossChain)
		return err
	})
	return errors.Join(disarmErr, err, lossErr)
}

// sortedSet is the nodes of a set, in order: faults act on them in the
// same order every run.
func sortedSet(s map[string]bool) []string { return slices.Sorted(maps.Keys(s)) }

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(s), "\n", " | ")), " ")
}

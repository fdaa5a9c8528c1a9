package nemesis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
)

var partitionKind = Kind{Name: "partition", NetAdmin: true, Outlived: true, Service: true, Needs: needsNodes("partition"),
	New: func(_ context.Context, e Env) Fault {
		return &Partition{Cluster: e.Cluster, Topology: e.Topology, Holders: e.Holders}
	},
}

var failoverKind = Kind{Name: "failover", NetAdmin: true, Outlived: true, Service: true,
	Needs: func(t Topology) string {
		if len(t.Sentinels) == 0 {
			return "has no Sentinels to promote a replica: the failover fault needs Redis with Sentinel"
		}
		return ""
	},
	New: func(_ context.Context, e Env) Fault {
		return &Partition{Cluster: e.Cluster, Topology: e.Topology, Holders: e.Holders, Failover: true}
	},
}

// Partition cuts links by dropping packets both ways (INPUT and OUTPUT)
// inside the network namespace of each node on either side, as a real
// blackhole does. Its shapes follow Jepsen's (isolate one node, halves,
// majorities ring, bridge, isolate the leader) plus the cuts that matter to
// a lock: the holder cut off from its lock service, for Redlock, whose
// nodes never talk to each other, the holder cut from a minority of nodes,
// and for a shared server (Topology.Shared) the server cut from every
// client.
//
// With Failover set it makes one shape only, for Redis with Sentinel: the
// primary and some clients on one side, the replicas, the Sentinels and the
// other clients on the other, so that Sentinel promotes a replica while the
// old primary still serves the clients that can reach it.
type Partition struct {
	Cluster  Cluster
	Topology Topology
	Holders  Holders
	Failover bool

	mu  sync.Mutex
	cut map[string]bool
}

// Name implements Fault.
func (p *Partition) Name() string {
	if p.Failover {
		return "failover"
	}
	return "partition"
}

func (p *Partition) shapes() []string {
	if p.Failover {
		return []string{"failover"}
	}
	shapes := []string{"client-holder"}
	t := p.Topology
	if t.Independent {
		return append(shapes, "client-minority")
	}
	if t.Shared {
		shapes = append(shapes, "isolate-service")
	}
	if n := len(t.Service) + len(t.Sentinels); n >= 2 {
		shapes = append(shapes, "isolate-one", "halves")
		if n >= 3 {
			shapes = append(shapes, "bridge")
		}
		if n >= 5 {
			shapes = append(shapes, "majorities-ring")
		}
		if t.Leader != nil {
			shapes = append(shapes, "isolate-leader")
		}
	}
	return shapes
}

// Inject implements Fault.
func (p *Partition) Inject(ctx context.Context, r *rand.Rand) (Injection, error) {
	shapes := p.shapes()
	shape := shapes[r.IntN(len(shapes))]
	pairs, targets, err := p.plan(ctx, r, shape)
	if err != nil {
		return Injection{}, err
	}
	if err := p.apply(ctx, pairs); err != nil {
		return Injection{}, err
	}
	return Injection{Shape: shape, Targets: targets}, nil
}

// plan returns the links to cut and a description of the sides.
func (p *Partition) plan(ctx context.Context, r *rand.Rand, shape string) ([][2]string, []string, error) {
	t := p.Topology
	nodes := append(slices.Clone(t.Service), t.Sentinels...)
	split := func(a, b []string) ([][2]string, []string) {
		return crossing(a, b), []string{strings.Join(a, ","), strings.Join(b, ",")}
	}
	switch shape {
	case "client-holder", "client-minority":
		holder, err := p.Holders.WaitHolder(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrNoTarget, err)
		}
		from := nodes
		if shape == "client-minority" {
			from = minority(r, t.Service)
		}
		pairs, sides := split([]string{holder}, from)
		return pairs, sides, nil
	case "isolate-service":
		pairs, sides := split(t.Service, t.Clients)
		return pairs, sides, nil
	case "isolate-one":
		one := pick(r, nodes, 1)
		pairs, sides := split(one, without(nodes, one))
		return pairs, sides, nil
	case "isolate-leader", "failover":
		leader, err := t.Leader(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: find the leader: %w", ErrNoTarget, err)
		}
		side := []string{leader}
		other := without(nodes, side)
		if shape == "failover" {
			// Some clients stay with the old primary, the rest follow the
			// Sentinels to the new one.
			stay := pick(r, t.Clients, max(1, len(t.Clients)/2))
			side = append(side, stay...)
			other = append(other, without(t.Clients, stay)...)
		}
		pairs, sides := split(side, other)
		return pairs, sides, nil
	case "halves":
		small := minority(r, nodes)
		pairs, sides := split(small, without(nodes, small))
		return pairs, sides, nil
	case "bridge":
		// Two halves that cannot see each other, and one node that sees both.
		s := pick(r, nodes, len(nodes))
		bridge := s[r.IntN(len(s))]
		rest := without(s, []string{bridge})
		a, b := rest[:len(rest)/2], rest[len(rest)/2:]
		return crossing(a, b), []string{strings.Join(a, ","), bridge, strings.Join(b, ",")}, nil
	default: // majorities-ring
		// On a random ring each node keeps the k nearest on either side:
		// 2k+1 nodes, a majority, and a different one for every node.
		s := pick(r, nodes, len(nodes))
		r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
		k := (len(s)/2 + 1) / 2
		var pairs [][2]string
		for i := range s {
			for j := i + 1; j < len(s); j++ {
				if min(j-i, len(s)-(j-i)) > k {
					pairs = append(pairs, [2]string{s[i], s[j]})
				}
			}
		}
		return pairs, []string{"ring " + strings.Join(s, ",")}, nil
	}
}

// crossing is every link between a node of a and a node of b.
func crossing(a, b []string) [][2]string {
	var out [][2]string
	for _, x := range a {
		for _, y := range b {
			out = append(out, [2]string{x, y})
		}
	}
	return out
}

// apply drops, on each side of every pair, what comes from or goes to the
// other: one command per node.
func (p *Partition) apply(ctx context.Context, pairs [][2]string) error {
	ips := map[string]string{}
	rules := map[string][]string{}
	for _, pr := range pairs {
		for _, n := range pr {
			if _, ok := ips[n]; !ok {
				ip, err := p.Cluster.IP(ctx, n)
				if err != nil {
					return err
				}
				ips[n] = ip
			}
		}
		a, b := pr[0], pr[1]
		rules[a] = append(rules[a], dropBoth(ips[b]))
		rules[b] = append(rules[b], dropBoth(ips[a]))
	}
	nodes := make([]string, 0, len(rules))
	for n := range rules {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut == nil {
		p.cut = map[string]bool{}
	}
	for _, n := range nodes {
		p.cut[n] = true
		if _, err := p.Cluster.Exec(ctx, n, "sh", "-c", strings.Join(rules[n], " && ")); err != nil {
			return fmt.Errorf("cut %s: %w", n, err)
		}
	}
	return nil
}

func dropBoth(ip string) string {
	return fmt.Sprintf("iptables -A INPUT -s %s -j DROP && iptables -A OUTPUT -d %s -j DROP", ip, ip)
}

// Heal implements Fault.
func (p *Partition) Heal(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return healEach(p.cut, func(n string) error {
		_, err := p.Cluster.Exec(ctx, n, "sh", "-c", "iptables -F INPUT && iptables -F OUTPUT")
		return err
	})
}

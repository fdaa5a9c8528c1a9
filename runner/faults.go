package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lockbench/lockbench/nemesis"
)

// caps is what the run's containers may do beyond Docker's defaults: set
// firewall rules in their own network namespace, and only when a fault cuts
// links.
func (r *run) caps() []string {
	if r.cfg.Has("partition") || r.cfg.Has("failover") {
		return []string{"NET_ADMIN"}
	}
	return nil
}

// fitForFaults adapts the service's nodes to the faults asked for: the
// capability to cut links, and for a clock fault, Redis started under the
// clock shim with its offset file at zero.
func (r *run) fitForFaults(services []service) []service {
	for i := range services {
		n := &services[i].node
		n.Caps = r.caps()
		if r.cfg.Has("clock") && n.Role == "redis" {
			env, cmd := nemesis.UnderClock(n.Cmd)
			n.Env, n.Cmd = append(n.Env, env...), cmd
		}
	}
	return services
}

// topology tells the faults which node is what.
func (r *run) topology() nemesis.Topology {
	t := nemesis.Topology{Clients: r.clients, Independent: r.cfg.Backend == "redlock"}
	for _, s := range backends[r.cfg.Backend].services(&r.cfg) {
		switch s.node.Role {
		case "sentinel":
			t.Sentinels = append(t.Sentinels, s.node.Name)
		default:
			t.Service = append(t.Service, s.node.Name)
		}
		t.Redis = t.Redis || s.node.Role == "redis"
	}
	switch r.cfg.Backend {
	case "redis":
		t.Leader = func(context.Context) (string, error) { return "redis", nil }
	case "redis-sentinel":
		t.Leader = r.primary
	case "etcd":
		t.Leader = r.etcdLeader
	case "zookeeper":
		t.Leader = r.zkLeader
	}
	return t
}

// primary asks the Sentinels which Redis is the primary now.
func (r *run) primary(ctx context.Context) (string, error) {
	var errs []error
	for _, s := range []string{"s1", "s2", "s3"} {
		out, err := r.cluster.Exec(ctx, s, "redis-cli", "-p", "26379", "sentinel", "get-master-addr-by-name", sentinelMaster)
		if err == nil {
			if host, _, _ := strings.Cut(strings.TrimSpace(out), "\n"); host != "" {
				return host, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", s, err))
	}
	return "", errors.Join(errs...)
}

// etcdLeader asks the members, one after the other (some may be paused or
// cut off), which of them leads.
func (r *run) etcdLeader(ctx context.Context) (string, error) {
	var errs []error
	for _, n := range etcdNames {
		out, err := r.cluster.Exec(ctx, n, "lockbench", "etcd-health", "--leader", "--endpoints", n+":2379")
		if err == nil {
			return strings.TrimSpace(out), nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", n, err))
	}
	return "", errors.Join(errs...)
}

// buildFaults makes the faults asked for, in the order they are healed:
// frozen and killed nodes come back before firewall rules are flushed in
// them.
func (r *run) buildFaults(ctx context.Context) []nemesis.Fault {
	t := r.topology()
	var faults []nemesis.Fault
	for _, name := range []string{"pause", "pause-node", "kill", "clock", "partition", "failover"} {
		if !r.cfg.Has(name) {
			continue
		}
		switch name {
		case "pause":
			faults = append(faults, &nemesis.PauseClient{Nodes: r.cluster, Holders: r.holders, Clients: r.clients, Target: r.cfg.PauseTarget})
		case "pause-node":
			faults = append(faults, &nemesis.PauseNode{Cluster: r.cluster, Topology: t})
		case "kill":
			faults = append(faults, &nemesis.Kill{Cluster: r.cluster, Topology: t, RestartDelay: r.cfg.RestartDelay.D()})
		case "clock":
			faults = append(faults, &nemesis.Clock{Cluster: r.cluster, Topology: t, TTL: r.cfg.TTL.D(), Missing: r.shimMissing(ctx, t)})
		case "partition", "failover":
			faults = append(faults, &nemesis.Partition{Cluster: r.cluster, Topology: t, Holders: r.holders, Failover: name == "failover"})
		}
	}
	return faults
}

// shimMissing says why the clock shim cannot be used, if it cannot.
func (r *run) shimMissing(ctx context.Context, t nemesis.Topology) string {
	if !t.Redis || len(t.Service) == 0 {
		return ""
	}
	if _, err := r.cluster.Exec(ctx, t.Service[0], "test", "-f", nemesis.ClockShim); err != nil {
		return "the node image has no clock shim (no C compiler where it was built)"
	}
	return ""
}

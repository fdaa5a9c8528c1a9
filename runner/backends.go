package runner

import (
	"fmt"
	"strings"

	"github.com/lockbench/lockbench/clusters"
)

// service is one node of a lock service with the probe that says it is up.
type service struct {
	node  clusters.Node
	probe []string
}

// backend describes how to run one lock service and point clients at it.
type backend struct {
	// tokens: the lock issues fencing tokens.
	tokens bool
	// lockless: clients take no lock at all.
	lockless bool
	services func(cfg *Config) []service
	// addrs is what the worker's --lock-addrs gets.
	addrs func(cfg *Config) []string
	// jvm: the service's nodes run the JVM image.
	jvm bool
	// ready, when set, is run after every probe passed, in the first node:
	// a check of the whole service (all members, a leader).
	ready func(cfg *Config) []string
}

const sentinelMaster = "lockbench"

var backends = map[string]backend{
	"redis": {
		tokens:   true,
		services: func(cfg *Config) []service { return []service{redisNode("redis", cfg)} },
		addrs:    func(*Config) []string { return []string{"redis:6379"} },
	},
	"redlock": {
		services: func(cfg *Config) []service {
			var out []service
			for _, n := range redlockNames(cfg) {
				out = append(out, redisNode(n, cfg))
			}
			return out
		},
		addrs: func(cfg *Config) []string { return withPort(redlockNames(cfg), 6379) },
	},
	"redis-sentinel": {
		tokens: true,
		services: func(cfg *Config) []service {
			out := []service{redisNode("r1", cfg)}
			for _, r := range []string{"r2", "r3"} {
				s := redisNode(r, cfg)
				s.node.Cmd = append(s.node.Cmd, "--replicaof", "r1", "6379")
				out = append(out, s)
			}
			for _, s := range []string{"s1", "s2", "s3"} {
				out = append(out, sentinelNode(s))
			}
			return out
		},
		addrs: func(*Config) []string { return []string{"s1:26379", "s2:26379", "s3:26379"} },
		// The primary sees both replicas, every Sentinel knows both (it
		// learns them from the primary's INFO, every 10 s: without them it
		// has nobody to promote) and they agree on a quorum.
		ready: func(*Config) []string {
			return []string{"sh", "-c", "redis-cli -h r1 info replication | grep -q connected_slaves:2 && " +
				"for s in s1 s2 s3; do redis-cli -h $s -p 26379 sentinel master " + sentinelMaster +
				" | grep -A1 -x num-slaves | grep -qx 2 || exit 1; done && " +
				"redis-cli -h s1 -p 26379 sentinel ckquorum " + sentinelMaster + " | grep 'OK 3 usable'"}
		},
	},
	"etcd": {
		tokens: true,
		services: func(*Config) []service {
			var out []service
			for _, n := range etcdNames {
				out = append(out, service{
					node: clusters.Node{Name: n, Role: "etcd", Cmd: []string{"lockbench", "etcd",
						"--name", n, "--data-dir", "/var/lib/etcd",
						"--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", "http://" + n + ":2379",
						"--listen-peer-urls", "http://0.0.0.0:2380", "--initial-advertise-peer-urls", "http://" + n + ":2380",
						"--initial-cluster", etcdCluster(), "--initial-cluster-state", "new", "--initial-cluster-token", "lockbench",
						// The data must survive a kill and restart; fsync would
						// measure the disk under the overlay, and a killed
						// process loses nothing the page cache holds.
						"--unsafe-no-fsync", "--log-level", "warn"}},
				})
			}
			return out
		},
		addrs: func(*Config) []string { return withPort(etcdNames, 2379) },
		ready: func(*Config) []string {
			return []string{"lockbench", "etcd-health", "--endpoints", strings.Join(withPort(etcdNames, 2379), ",")}
		},
	},
	"zookeeper": {
		tokens:   true,
		jvm:      true,
		services: zkServices,
		addrs:    func(*Config) []string { return withPort(zkNames, 2181) },
		ready:    zkReady,
	},
	"cas":    {lockless: true, services: func(*Config) []service { return nil }, addrs: func(*Config) []string { return nil }},
	"nolock": {lockless: true, services: func(*Config) []service { return nil }, addrs: func(*Config) []string { return nil }},
}

var etcdNames = []string{"e1", "e2", "e3"}

func etcdCluster() string {
	var parts []string
	for _, n := range etcdNames {
		parts = append(parts, n+"=http://"+n+":2380")
	}
	return strings.Join(parts, ",")
}

func redlockNames(cfg *Config) []string {
	var out []string
	for i := 1; i <= cfg.Nodes; i++ {
		out = append(out, fmt.Sprintf("r%d", i))
	}
	return out
}

func withPort(names []string, port int) []string {
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("%s:%d", n, port))
	}
	return out
}

// redisNode is a Redis server; by default without persistence, as a lock
// service usually runs, so that a killed node comes back empty.
func redisNode(name string, cfg *Config) service {
	cmd := []string{"redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--replica-announce-ip", name,
		"--dir", "/var/lib/redis", "--save", ""}
	switch cfg.RedisPersistence {
	case "everysec", "always":
		cmd = append(cmd, "--appendonly", "yes", "--appendfsync", cfg.RedisPersistence)
	default:
		cmd = append(cmd, "--appendonly", "no")
	}
	return service{node: clusters.Node{Name: name, Role: "redis", Cmd: cmd}, probe: []string{"redis-cli", "ping"}}
}

// sentinelNode runs Sentinel from a config written at start: Sentinel
// rewrites its config file, so it cannot come from the image.
func sentinelNode(name string) service {
	conf := strings.Join([]string{
		"port 26379",
		"sentinel resolve-hostnames yes",
		"sentinel announce-hostnames yes",
		"sentinel announce-ip " + name,
		"sentinel monitor " + sentinelMaster + " r1 6379 2",
		"sentinel down-after-milliseconds " + sentinelMaster + " 1000",
		"sentinel failover-timeout " + sentinelMaster + " 5000",
		"sentinel parallel-syncs " + sentinelMaster + " 1",
	}, "\n")
	return service{
		node: clusters.Node{Name: name, Role: "sentinel", Cmd: []string{"sh", "-c",
			"printf '%s\\n' \"$0\" > /etc/sentinel.conf && exec redis-server /etc/sentinel.conf --sentinel", conf}},
		probe: []string{"redis-cli", "-p", "26379", "ping"},
	}
}

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/lockbench/lockbench/history"
)

// Etcd keeps the protected counter in etcd itself, the fence etcd offers:
// every write is a transaction that applies only while its client still
// owns the lock.
type Etcd struct {
	cli   *clientv3.Client
	key   string
	epoch int64
	// guard is the comparison that holds while the writer owns the lock.
	guard func() (clientv3.Cmp, bool)
}

// etcdValue is what a write puts: the value and who wrote it, so that the
// key's revision history can be read back as a store log.
type etcdValue struct {
	Value  int64   `json:"value"`
	Set    []int64 `json:"set,omitempty"`
	Token  int64   `json:"token,omitempty"`
	Req    string  `json:"req"`
	Client string  `json:"client"`
	Time   int64   `json:"time"` // when the writer sent it, since the epoch
}

// NewEtcd stores keys under prefix in the cluster cli talks to.
func NewEtcd(cli *clientv3.Client, prefix string, epoch int64, guard func() (clientv3.Cmp, bool)) *Etcd {
	return &Etcd{cli: cli, key: prefix, epoch: epoch, guard: guard}
}

func (s *Etcd) path(key string) string { return s.key + "/" + key }

// Read returns the value and its version (etcd's count of writes to it).
func (s *Etcd) Read(ctx context.Context, r Request) (Response, error) {
	resp, err := s.cli.Get(ctx, s.path(r.Key))
	if err != nil {
		return Response{}, fmt.Errorf("etcd read: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return Response{Outcome: Accepted}, nil
	}
	var v etcdValue
	if err := json.Unmarshal(resp.Kvs[0].Value, &v); err != nil {
		return Response{}, fmt.Errorf("etcd read: %w", err)
	}
	return Response{Value: v.Value, Set: v.Set, Version: resp.Kvs[0].Version, Outcome: Accepted}, nil
}

// Write puts r.Value if the writer still owns the lock.
func (s *Etcd) Write(ctx context.Context, r Request) error {
	cmp, ok := s.guard()
	if !ok {
		return fmt.Errorf("%w: the client holds no lock", ErrRejected)
	}
	data, err := json.Marshal(etcdValue{Value: r.Value, Set: r.Set, Token: r.Token, Req: r.Req, Client: r.Client, Time: history.Mono() - s.epoch})
	if err != nil {
		return fmt.Errorf("etcd write: %w", err)
	}
	resp, err := s.cli.Txn(ctx).If(cmp).Then(clientv3.OpPut(s.path(r.Key), string(data))).Commit()
	if err != nil {
		return fmt.Errorf("etcd write: %w", err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("%w: lock no longer owned", ErrRejected)
	}
	return nil
}

// Log reads the key's whole revision history back as a store log: one
// accepted write per revision, in etcd's order. Writes whose transaction
// failed left no revision, and reads are not logged.
func (s *Etcd) Log(ctx context.Context, key string) ([]Entry, error) {
	head, err := s.cli.Get(ctx, s.path(key))
	if err != nil {
		return nil, fmt.Errorf("etcd log: %w", err)
	}
	if len(head.Kvs) == 0 {
		return nil, nil
	}
	last := head.Kvs[0].ModRevision
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out []Entry
	var prev int64
	for wr := range s.cli.Watch(ctx, s.path(key), clientv3.WithRev(1)) {
		if err := wr.Err(); err != nil {
			return nil, fmt.Errorf("etcd log: %w", err)
		}
		for _, ev := range wr.Events {
			if ev.Type != mvccpb.PUT {
				continue
			}
			var v etcdValue
			if err := json.Unmarshal(ev.Kv.Value, &v); err != nil {
				return nil, fmt.Errorf("etcd log: revision %d: %w", ev.Kv.ModRevision, err)
			}
			out = append(out, Entry{
				Seq: int64(len(out)), Time: v.Time, Req: v.Req, Client: v.Client, Op: "write", Key: key,
				Token: v.Token, Value: v.Value, Set: v.Set, Prev: prev, Outcome: Accepted,
			})
			prev = v.Value
			if ev.Kv.ModRevision >= last {
				return out, nil
			}
		}
	}
	return nil, errors.New("etcd log: watch ended before the last revision")
}

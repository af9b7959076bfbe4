package main

import (
	"github.com/spokeforge/spokeforge/internal/awsfake"
	"github.com/spokeforge/spokeforge/internal/repo"
)

// provisionFake builds a fake account; with a record folder it holds every
// resource the record derives except the names listed.
func provisionFake(dir string, except []string) (*awsfake.Server, error) {
	if dir == "" {
		return awsfake.New("111122223333", "us-east-1"), nil
	}
	e, errs := repo.LoadCluster(dir, dir)
	if len(errs) > 0 {
		return nil, errs
	}
	skip := map[string]bool{}
	for _, x := range except {
		skip[x] = true
	}
	n := e.Names
	f := awsfake.New(e.Cluster.Spec.AccountID, e.Cluster.Spec.Region)
	if !skip[n.IAMRole] {
		f.AllowRole(n.IAMRoleArn)
	}
	for _, s := range n.Secrets {
		if !skip[s.Name] {
			f.AddSecret(s.Name)
		}
	}
	for _, r := range n.Registries {
		if !skip[r.Name] {
			f.AddRepository(r.Name)
		}
	}
	for _, b := range n.Buckets {
		if !skip[b.Name] {
			if err := f.AddBucket(b.Name); err != nil {
				return nil, err
			}
		}
	}
	for _, q := range n.Queues {
		if !skip[q.Name] {
			f.AddQueue(q.Name)
		}
	}
	return f, nil
}

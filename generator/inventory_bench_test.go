package generator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// BenchmarkZonesBesideInventory is getparams' kind: zones at 10 concurrent
// callers while the inventory writes ClusterProfile statuses in the same
// process, back to back with no pause between cycles (production cycles every
// 15 s): off (no inventory, the "before"), steady (every Onboarding re-read
// each cycle, every status already current: no writes) and churn (every
// cluster's contracts flip each cycle: every status written). cycle-ms is the
// inventory's mean cycle time beside the callers.
func BenchmarkZonesBesideInventory(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, mode := range []string{"off", "steady", "churn"} {
			b.Run(fmt.Sprintf("clusters=%d/inventory=%s", n, mode), func(b *testing.B) {
				atGeneratorGC(b)
				e := env(b, n)
				if mode == "off" {
					benchServe(b, e.srv, KindZones)
					return
				}
				inv, flip := benchInventory(b, e, n)
				ctx, cancel := context.WithCancel(context.Background())
				var cycles atomic.Int64
				var spent atomic.Int64
				var wg sync.WaitGroup
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						if mode == "churn" {
							flip()
						}
						t := time.Now()
						if err := inv.Cycle(ctx); err != nil && ctx.Err() == nil {
							b.Error(err)
							return
						}
						spent.Add(int64(time.Since(t)))
						cycles.Add(1)
					}
				}()
				benchServe(b, e.srv, KindZones)
				cancel()
				wg.Wait()
				if c := cycles.Load(); c > 0 {
					b.ReportMetric(float64(spent.Load())/float64(c)/1e6, "cycle-ms")
				}
			})
		}
	}
}

// benchInventory is an Inventory over the synthetic repo: every cluster
// listed by Argo CD as connected, its Onboarding holding, its profile
// spokeforge's. flip turns every cluster's contracts from holding to failed
// and back.
func benchInventory(b testing.TB, e *benchEnv, n int) (*Inventory, func()) {
	now := time.Now()
	argo := &fakeArgo{obs: map[string]*OnboardingView{}}
	store := &fakeProfiles{served: true, objs: map[string]*unstructured.Unstructured{}}
	holding, failing := holdingOnboarding(now), failingOnboarding(now, "Queues", "sqs:GetQueueUrl s00000-jobs: refused by IAM")
	for i := range n {
		c := fmt.Sprintf("c%05d", i)
		argo.clusters = append(argo.clusters, ClusterConnection{Name: c, Server: fmt.Sprintf("https://%s.api.example.internal:6443", c), Status: "Successful", AttemptedAt: now})
		argo.obs["spoke-"+c] = holding
		store.add(c, ClusterManagerName)
	}
	inv := NewInventory(InventoryConfig{Namespace: "argocd", OnboardingRefresh: time.Nanosecond},
		&staticSource{snap: e.snap}, e.hub, argo, store)
	if err := inv.Cycle(context.Background()); err != nil {
		b.Fatal(err)
	}
	hold := true
	return inv, func() {
		hold = !hold
		ob := failing
		if hold {
			ob = holding
		}
		argo.mu.Lock()
		for k := range argo.obs {
			argo.obs[k] = ob
		}
		argo.mu.Unlock()
	}
}

// BenchmarkInventoryCycle is one inventory cycle alone at 10,000 clusters:
// steady (every Onboarding re-read, nothing to write) and churn (every
// status written).
func BenchmarkInventoryCycle(b *testing.B) {
	for _, mode := range []string{"steady", "churn"} {
		b.Run("clusters=10000/"+mode, func(b *testing.B) {
			atGeneratorGC(b)
			inv, flip := benchInventory(b, env(b, 10000), 10000)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if mode == "churn" {
					flip()
				}
				if err := inv.Cycle(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client"
)

// The examples need a running rlserver, so they are compiled but not run.

func newClient() *client.Client {
	return client.New(redis.NewClient(&redis.Options{
		Addr: "127.0.0.1:6380", ContextTimeoutEnabled: true, MaxRetries: -1,
	}))
}

// A limit per second and a quota per day, checked as one: a request the
// second refuses does not cost a unit of the day.
func ExampleClient_All() {
	rl, ctx := newClient(), context.Background()
	overall, each, err := rl.All(ctx, 1,
		client.KeyedRule{Key: "{ada}:second", Rule: client.SlidingWindow{Limit: 10, Window: time.Second}},
		client.KeyedRule{Key: "{ada}:day", Rule: client.Quota{Limit: 10_000, Period: client.Daily}},
	)
	if err != nil {
		log.Fatal(err)
	}
	if !overall.Allowed {
		fmt.Println("retry in", overall.RetryAfter, "; left today:", each[1].Remaining)
	}
}

// At most 4 exports run at once, whichever instance runs them.
func ExampleClient_Acquire() {
	rl, ctx := newClient(), context.Background()
	lease, d, err := rl.Acquire(ctx, "exports", 4, 10*time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	if !d.Allowed {
		fmt.Println("busy; a slot frees within", d.RetryAfter)
		return
	}
	defer rl.Release(ctx, lease)
	// ... run the export ...
}

// Smooth a burst into a steady 10 a second instead of refusing it.
func ExampleShape() {
	rl, ctx := newClient(), context.Background()
	d, err := rl.Allow(ctx, "mailer", client.Shape{Capacity: 100, LeakTokens: 10, LeakEvery: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	if !d.Allowed {
		fmt.Println("queue full")
		return
	}
	time.Sleep(d.Delay) // wait for the mails queued ahead
	// ... send the mail ...
}

// The limit lives on the server under a name; an operator tries a stricter
// one in shadow mode before enforcing it.
func ExampleClient_Check() {
	rl, ctx := newClient(), context.Background()
	err := rl.SetPolicy(ctx, client.ServerPolicy{
		Name: "search-strict", Rule: client.SlidingWindow{Limit: 50, Window: time.Minute}, Shadow: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	d, err := rl.Check(ctx, "client:ada", "search-strict", 1)
	switch {
	case errors.Is(err, client.ErrNoSuchPolicy):
		fmt.Println("policy deleted meanwhile")
	case err != nil:
		log.Fatal(err)
	case d.ShadowDenied:
		fmt.Println("allowed, but the strict limit would have refused")
	}
}

// A worker takes up to 100 units of its budget, processes what it got, and
// gives back what it did not use.
func ExampleClient_AllowPartial() {
	rl, ctx := newClient(), context.Background()
	rule := client.TokenBucket{Capacity: 1000, RefillTokens: 100, RefillEvery: time.Second}
	granted, d, err := rl.AllowPartial(ctx, "worker:7", rule, 100)
	if err != nil {
		log.Fatal(err)
	}
	if granted == 0 {
		fmt.Println("nothing available for", d.RetryAfter)
		return
	}
	done := process(granted)
	if _, err := rl.Refund(ctx, "worker:7", rule, granted-done); err != nil {
		log.Print(err)
	}
}

func process(n int64) int64 { return n }

// A reply of a language model, 1,000 tokens a minute: 500 reserved up front,
// the actual count settled once the reply is done. Settle may be retried:
// the reservation is settled once.
func ExampleClient_Reserve() {
	rl, ctx := newClient(), context.Background()
	rule := client.TokenBucket{Capacity: 1000, RefillTokens: 1000, RefillEvery: time.Minute}
	r, err := rl.Reserve(ctx, "chat:ada", rule, 500, 5*time.Minute)
	if err != nil {
		log.Fatal(err)
	}
	if !r.Allowed {
		fmt.Println("retry in", r.RetryAfter)
		return
	}
	used := int64(1200) // ... generate the reply, count its tokens ...
	d, err := rl.Settle(ctx, r.ID, used)
	if err != nil {
		log.Fatal(err)
	}
	if d.Remaining < 0 {
		fmt.Println("in debt by", -d.Remaining, "tokens: the next request waits", d.RetryAfter)
	}
}

package main

import (
	"net/http"
	"time"

	"github.com/rlserver/rlserver/client"
)

// apiKeys maps the API keys the bookstore issued to the clients they
// belong to. The partition key is the client id found here, never the
// header itself: a caller inventing API keys gets 401, not a fresh budget.
var apiKeys = map[string]string{
	"key-ada-123": "client:ada",
	"key-bob-456": "client:bob",
}

// ordersRule is the seed article's limit: 5 orders a minute per client, as
// a sliding window (the article's algorithm).
var ordersRule = client.SlidingWindow{Limit: 5, Window: time.Minute}

// appConfig is what main reads from its flags.
type appConfig struct {
	limiter     *client.Client
	unavailable client.FailMode
	instances   int           // instances of this API sharing the limit
	timeout     time.Duration // wait for rlserver at most this long
}

// newApp returns the API's routes: POST /orders behind the limiter.
func newApp(cfg appConfig) (http.Handler, error) {
	orders, err := client.NewHTTPLimiter(client.HTTPConfig{
		Client: cfg.limiter,
		Policy: "orders",
		Rule:   ordersRule,
		Key: client.APIKey("X-Api-Key", func(key string) (string, bool) {
			id, ok := apiKeys[key]
			return id, ok
		}),
		Timeout:     cfg.timeout,
		Unavailable: cfg.unavailable,
		Fallback:    client.LocalFallback{Instances: cfg.instances},
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("POST /orders", orders.Wrap(http.HandlerFunc(acceptOrder)))
	return mux, nil
}

// acceptOrder takes an order for processing: 202 Accepted, as in the seed.
func acceptOrder(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusAccepted)
}

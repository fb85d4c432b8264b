package client

import "net/http"

// KeyFunc names who a request is limited as: the partition key, e.g. a
// client id. An error means the request cannot be attributed to anyone and
// is answered by HTTPConfig.OnKeyError (401 by default) without asking
// rlserver.
//
// Derive the key from something the application has checked, never from
// raw request input: every distinct key is a limiter of its own, so a
// caller who can choose keys at will (a random API key per request) gets a
// fresh budget each time and fills the server with keys.
type KeyFunc func(r *http.Request) (string, error)

// APIKey is the seed article's KeyFunc: the API key in the named header is
// looked up in the application's own table, and the client id found there
// is the partition key. A missing or unknown API key gives ErrUnknownAPIKey,
// so it never reaches rlserver.
func APIKey(header string, lookup func(apiKey string) (clientID string, ok bool)) KeyFunc {
	return func(r *http.Request) (string, error) {
		key := r.Header.Get(header)
		if key == "" {
			return "", ErrUnknownAPIKey
		}
		id, ok := lookup(key)
		if !ok {
			return "", ErrUnknownAPIKey
		}
		return id, nil
	}
}

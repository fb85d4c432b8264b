// Package federation joins independent rlserver clusters, one per region,
// so that a limit can be global: one budget for all regions, with every
// request still decided in the region it reaches (docs/federation.md).
//
// The state lives in the engine (a global key's record, engine/global*.go);
// this package moves it between regions:
//
//   - the agent, every sync interval, lists the global keys of the shards
//     this node leads (engine.OpGlobalScan); for a strict key it asks the
//     key's home region for a block of units, reporting what the blocks it
//     is done with used, and records the answer (OpGlobalLease at the
//     home, OpGlobalInstall here); for a relaxed key it sends its counts
//     to every other region (OpGlobalCounts there);
//   - the server answers the other regions' agents on the federation
//     port, applying their requests to this region's shards.
//
// A key's home is chosen from the key and the sorted region names by
// rendezvous hashing (Home), so every region agrees without asking. The
// link between regions is RESP over TCP (TLS when configured), each
// connection authenticated by a challenge answered with an HMAC of a
// secret every region shares; every message is idempotent (a lease
// request carries the region's id for it, counts merge by maximum), so
// a retry never counts twice.
//
// The package reaches the shards through the small Shards interface it
// declares, as package rls does; cmd/rlserver wires it.
package federation

package server

// Stats are the server's own counters: the ones INFO's clients and stats
// sections report, read from the same variables, so that metrics built on
// them agree with INFO. CONFIG RESETSTAT sets the counters back to zero.
type Stats struct {
	ConnectedClients    int   // connections open now (connected_clients)
	EventLoopClients    int64 // of them, those an event loop serves (event_loop_clients)
	MaxClients          int   // the bound on them (maxclients)
	ConnectionsReceived int64 // connections accepted (total_connections_received)
	RejectedConnections int64 // connections refused at maxclients (rejected_connections)
	CommandsProcessed   int64 // commands answered (total_commands_processed)
	MaxMemory           int64 // --maxmemory in bytes, 0 for none (maxmemory)
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	return Stats{
		ConnectedClients:    s.clientCount(),
		EventLoopClients:    s.loops.clients(),
		MaxClients:          s.cfg.MaxClients,
		ConnectionsReceived: s.stats.connections.Load(),
		RejectedConnections: s.stats.rejected.Load(),
		CommandsProcessed:   s.stats.commands.Load(),
		MaxMemory:           s.memoryLimit().Bytes,
	}
}

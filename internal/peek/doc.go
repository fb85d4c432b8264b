// Package peek tells whether an idle connection's peer has closed it,
// without reading from it: a request written into a connection the peer
// closed is lost, and its loss looks like a request that may have been
// applied. The bus's forwarding and Raft's pooled connections ask before
// they reuse one.
package peek

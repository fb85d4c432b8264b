package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// With BusTLS, the bus speaks mutual TLS: every connection, Raft or
// forwarding, starts with a handshake in which both nodes present their
// certificate and check the other's against the cluster's CAs, before the
// bus header is even read. A process without a certificate those CAs
// signed cannot vote, replicate, or have a request forwarded and counted;
// nor can anyone on the network between nodes read or change the traffic.
//
// The peer's host name is not checked, as Redis does not check it between
// its nodes: nodes are dialled at their bus addresses in Members, which are
// often IP addresses a certificate does not name, and trust comes from the
// CA. So the CA must be the cluster's own (one that signs nothing but the
// nodes' certificates), or anyone it signed is a member.

// BusTLS secures the bus with mutual TLS.
type BusTLS struct {
	// Certificate is this node's, presented when it accepts a connection
	// and when it opens one. Its key usage may be server or client
	// authentication, or both: the same certificate serves both ends.
	Certificate tls.Certificate
	// CAs are the authorities a peer's certificate must chain to.
	CAs *x509.CertPool
}

// errNoPeerCertificate refuses a peer that presented no certificate.
var errNoPeerCertificate = errors.New("the peer presented no certificate")

// verify checks the peer's chain against the CAs, for any key usage.
func (b *BusTLS) verify(rawCerts [][]byte, _ [][]*x509.Certificate) error {
	if len(rawCerts) == 0 {
		return errNoPeerCertificate
	}
	certs := make([]*x509.Certificate, len(rawCerts))
	for i, raw := range rawCerts {
		c, err := x509.ParseCertificate(raw)
		if err != nil {
			return fmt.Errorf("peer certificate: %w", err)
		}
		certs[i] = c
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{
		Roots: b.CAs, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	})
	return err
}

// ServerConfig is the configuration of an accepting end, for another
// link that authenticates its nodes as the bus does (the federation's).
func (b *BusTLS) ServerConfig() *tls.Config { return b.server() }

// ClientConfig is the configuration of a dialling end, as ServerConfig.
func (b *BusTLS) ClientConfig() *tls.Config { return b.client() }

// server is the configuration of the accepting end.
func (b *BusTLS) server() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{b.Certificate},
		// Verified by verify, which accepts a server certificate as a
		// client's: the same certificate serves both ends.
		ClientAuth:            tls.RequireAnyClientCert,
		VerifyPeerCertificate: b.verify,
		MinVersion:            tls.VersionTLS12,
	}
}

// client is the configuration of the dialling end.
func (b *BusTLS) client() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{b.Certificate},
		// Checked by verify, against the CAs and without the host name
		// (see above), instead of by crypto/tls.
		InsecureSkipVerify:    true,
		VerifyPeerCertificate: b.verify,
		MinVersion:            tls.VersionTLS12,
	}
}

package receipt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/internal/atomicfile"
	"github.com/sandbank/sandbank/record"
)

// Key files are PEM: the private key a PKCS #8 "PRIVATE KEY" block, the
// public key a PKIX "PUBLIC KEY" block (as openssl writes them), which may
// carry a "Retired" header (RFC 3339) for a key that no longer signs.

// PublicKeyExt is the extension of a public key file ReadKeyDir reads.
const PublicKeyExt = ".pub"

// maxKeyFileBytes bounds a key file.
const maxKeyFileBytes = 64 << 10

// retiredHeader is the PEM header of a retired public key.
const retiredHeader = "Retired"

// WriteKeyFiles writes s's private key to privPath (mode 0600) and its
// public key to pubPath (mode 0644), as PEM. It never overwrites a file
// (an error matching fs.ErrExist), and leaves neither file when it fails.
func WriteKeyFiles(s *Ed25519Signer, privPath, pubPath string) error {
	der, err := x509.MarshalPKCS8PrivateKey(s.key)
	if err != nil {
		return fmt.Errorf("effect: encoding the private key: %w", err)
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	pub, err := MarshalPublicKey(TrustedKey{PublicKey: s.PublicKey()})
	if err != nil {
		return err
	}
	if err := atomicfile.CreateFile(privPath, 0o600, priv); err != nil {
		return err
	}
	if err := atomicfile.CreateFile(pubPath, 0o644, pub); err != nil {
		_ = os.Remove(privPath)
		return err
	}
	return nil
}

// MarshalPublicKey returns k's public key as a PEM "PUBLIC KEY" block,
// with a "Retired" header when k is retired.
func MarshalPublicKey(k TrustedKey) ([]byte, error) {
	if len(k.PublicKey) != ed25519.PublicKeySize {
		return nil, invalidKey("effect: not an Ed25519 public key")
	}
	der, err := x509.MarshalPKIXPublicKey(k.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("effect: encoding the public key: %w", err)
	}
	b := &pem.Block{Type: "PUBLIC KEY", Bytes: der}
	if !k.Retired.IsZero() {
		b.Headers = map[string]string{retiredHeader: k.Retired.UTC().Format(time.RFC3339)}
	}
	return pem.EncodeToMemory(b), nil
}

// ErrKeyFileMode is matched by the error of ReadSignerFile for a private
// key file that others may read or write (mode more open than 0600). It
// matches effect.ErrInvalidKey.
var ErrKeyFileMode error = &keyError{"effect: private key file mode is more open than 0600"}

// ReadSignerFile reads an Ed25519 private key file (PEM PKCS #8, as
// WriteKeyFiles writes it). On Unix it refuses a file whose mode lets
// anyone but its owner read or write it (ErrKeyFileMode), before reading
// it. Other failures match effect.ErrInvalidKey, or are the file system's.
func ReadSignerFile(path string) (*Ed25519Signer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if mode := fi.Mode().Perm(); runtime.GOOS != "windows" && mode&0o077 != 0 {
		return nil, fmt.Errorf("%w (it is %#o; chmod 600 it)", ErrKeyFileMode, mode)
	}
	b, err := readKeyFile(f)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, invalidKey("effect: the key file holds no PEM PRIVATE KEY block")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, invalidKey("effect: the key file's private key cannot be parsed")
	}
	ek, ok := key.(ed25519.PrivateKey)
	if !ok {
		return nil, invalidKey("effect: the key file's private key is not an Ed25519 key")
	}
	return NewEd25519Signer(ek)
}

// ReadPublicKeyFile reads a public key file (PEM PKIX, as WriteKeyFiles
// writes it, with an optional "Retired" header).
func ReadPublicKeyFile(path string) (TrustedKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return TrustedKey{}, err
	}
	defer f.Close()
	b, err := readKeyFile(f)
	if err != nil {
		return TrustedKey{}, err
	}
	return ParsePublicKey(b)
}

// ParsePublicKey parses a public key PEM block (see ReadPublicKeyFile).
func ParsePublicKey(b []byte) (TrustedKey, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PUBLIC KEY" {
		return TrustedKey{}, invalidKey("effect: no PEM PUBLIC KEY block")
	}
	key, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return TrustedKey{}, invalidKey("effect: the public key cannot be parsed")
	}
	ek, ok := key.(ed25519.PublicKey)
	if !ok {
		return TrustedKey{}, invalidKey("effect: the public key is not an Ed25519 key")
	}
	k := TrustedKey{KeyID: record.KeyIDOf(ek), Algorithm: record.SignatureEd25519, PublicKey: ek}
	if s, ok := block.Headers[retiredHeader]; ok {
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
		if err != nil {
			return TrustedKey{}, invalidKey("effect: the public key's Retired header is not an RFC 3339 time")
		}
		k.Retired = t
	}
	return k, nil
}

// ReadKeys reads trusted keys from path: a directory's public key files
// (ReadKeyDir), a JSON document of published keys (PublishedKeys, as
// GET /.well-known/sandbank-keys serves it), or one public key file
// (ReadPublicKeyFile).
func ReadKeys(path string) (*KeySet, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return ReadKeyDir(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := readKeyFile(f)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		var doc PublishedKeys
		if err := json.Unmarshal(t, &doc); err != nil {
			return nil, invalidKey("effect: the keys document is not JSON of published keys")
		}
		return NewKeySet(doc.Keys...)
	}
	k, err := ParsePublicKey(b)
	if err != nil {
		return nil, err
	}
	return NewKeySet(k)
}

// ReadKeyDir reads every public key file (*.pub) in dir into a KeySet.
// A file that is not a public key fails the whole set, naming it.
func ReadKeyDir(dir string) (*KeySet, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*"+PublicKeyExt))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	slices.Sort(names)
	var keys []TrustedKey
	for _, name := range names {
		k, err := ReadPublicKeyFile(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", effect.Excerpt(filepath.Base(name)), err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, invalidKey("effect: the key directory holds no *.pub file")
	}
	return NewKeySet(keys...)
}

// readKeyFile reads at most maxKeyFileBytes of r.
func readKeyFile(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxKeyFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxKeyFileBytes {
		return nil, invalidKey("effect: the key file is larger than 64 KiB")
	}
	return b, nil
}

// ReadOrCreateSignerFile reads the private key file at path
// (ReadSignerFile), or, when there is none, generates a key and writes
// it there (mode 0600) with its public key beside it (path's name with
// PublicKeyExt for its extension), reporting created. The key file
// appears whole or not at all (written aside, then linked into place), so
// two processes starting at once on one directory end with one key. The
// directory is created (mode 0700) when missing.
func ReadOrCreateSignerFile(path string) (s *Ed25519Signer, created bool, err error) {
	s, err = ReadSignerFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return s, false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, err
	}
	gen, err := GenerateEd25519Signer()
	if err != nil {
		return nil, false, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(gen.key)
	if err != nil {
		return nil, false, fmt.Errorf("effect: encoding the private key: %w", err)
	}
	// Written whole or not at all, and never over a key: when path
	// exists, another process won, and its key is the one.
	if err := atomicfile.CreateFile(path, 0o600, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
		if errors.Is(err, fs.ErrExist) {
			s, err = ReadSignerFile(path)
			return s, false, err
		}
		return nil, false, err
	}
	pub, err := MarshalPublicKey(TrustedKey{PublicKey: gen.PublicKey()})
	if err != nil {
		return nil, false, err
	}
	pubPath := strings.TrimSuffix(path, filepath.Ext(path)) + PublicKeyExt
	if err := atomicfile.WriteFile(pubPath, 0o644, pub); err != nil {
		return nil, false, err
	}
	return gen, true, nil
}

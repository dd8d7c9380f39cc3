package identity

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxKeyFileBytes bounds a key file read (an ML-DSA-65 PEM is ~2.7 KiB).
const MaxKeyFileBytes = 64 << 10

// PublicSuffix names the public key file written beside a private one.
const PublicSuffix = ".pub"

// WriteKeyPair writes key to path (PEM PKCS #8, mode 0600) and its public
// half to path+".pub" (PEM SubjectPublicKeyInfo, mode 0644). Neither file
// may exist: a key is never overwritten.
func WriteKeyPair(path string, key *PrivateKey) error {
	priv, err := key.MarshalPEM()
	if err != nil {
		return err
	}
	pub, err := key.Public().MarshalPEM()
	if err != nil {
		return err
	}
	if _, err := os.Lstat(path + PublicSuffix); err == nil {
		return fmt.Errorf("%s already exists; refusing to overwrite a key", path+PublicSuffix)
	}
	if err := writeNew(path, priv, 0o600); err != nil {
		return err
	}
	if err := writeNew(path+PublicSuffix, pub, 0o644); err != nil {
		_ = os.Remove(path)
		return err
	}
	return nil
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists; refusing to overwrite a key", path)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return err
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(path)
		return err
	}
	return nil
}

func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxKeyFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxKeyFileBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes: not a key file", path, MaxKeyFileBytes)
	}
	return data, nil
}

// LoadPrivateFile reads a PEM private key file. Loose reports whether the
// file is readable by its group or others (the caller should warn).
func LoadPrivateFile(path string) (key *PrivateKey, loose bool, err error) {
	data, err := readKeyFile(path)
	if err != nil {
		return nil, false, err
	}
	key, err = ParsePrivatePEM(data)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		loose = true
	}
	return key, loose, nil
}

// LoadPublicFile reads a PEM public key file (or the public half of a
// private key file).
func LoadPublicFile(path string) (*PublicKey, error) {
	data, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	key, err := ParsePublicPEM(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return key, nil
}

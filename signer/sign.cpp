// sign.cpp — building, signing, self-verifying, recording and writing signature bundles.
#include "signer/sign.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>

#include "clawguard/file_io.h"
#include "clawguard/limits.h"
#include "clawguard/manifest.h"
#include "clawguard/sha256.h"
#include "clawguard/unique_fd.h"
#include "signer/package_manifest.h"

namespace clawguard::signer {
namespace {

Result<std::vector<ossl::UniquePtr<X509>>> ReadChain(const std::string& chain_path) {
  CLAWGUARD_ASSIGN_OR_RETURN(std::string pem, ReadFileBounded(chain_path, limits::kMaxCertFile));
  auto chain = ParsePemCertificates(pem, Reason::kConfigInvalid);
  if (!chain.ok()) {
    return chain.error().WithContext(
        "--chain " + chain_path +
        " must hold PEM certificates, the leaf first (ci/make-test-pki writes NAME-chain.pem)");
  }
  if (chain->size() > limits::kMaxChainLength) {
    return Status(Reason::kConfigInvalid,
                  "--chain " + chain_path + " holds " + std::to_string(chain->size()) +
                      " certificates; at most " + std::to_string(limits::kMaxChainLength));
  }
  return std::move(chain).value();
}

// LeafOrganization returns the leaf's first subject O ("" if it has none); kPublisherNotAllowed
// if that O is not valid text (verifiers refuse such a leaf for the same reason).
Result<std::string> LeafOrganization(X509* leaf) {
  X509_NAME* subject = X509_get_subject_name(leaf);  // get0
  const int idx = X509_NAME_get_index_by_NID(subject, NID_organizationName, -1);
  if (idx < 0) return std::string();
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, idx));  // get0
  unsigned char* raw = nullptr;
  const int len = ASN1_STRING_to_UTF8(&raw, data);  // allocates |raw|; owned by |utf8|
  const ossl::UniqueBuffer utf8(raw);
  if (len < 0) {
    return Status(
        Reason::kPublisherNotAllowed,
        "expected the leaf certificate's subject O to be text, but it cannot be read as UTF-8: " +
            ossl::GetSslErrors());
  }
  return std::string(reinterpret_cast<const char*>(utf8.get()), static_cast<size_t>(len));
}

std::vector<std::string> LeafWarnings(const PreparedPayload& p) {
  std::vector<std::string> warnings;
  X509* leaf = p.chain.front().get();
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) <= 0) {
    warnings.push_back(
        "the leaf certificate has expired: verifiers will refuse this signature (cert_expired)");
  } else if (X509_cmp_current_time(X509_get0_notBefore(leaf)) >= 0) {
    warnings.push_back(
        "the leaf certificate is not valid yet: verifiers will refuse it until its notBefore");
  }
  const uint32_t flags = X509_get_extension_flags(leaf);
  if ((flags & EXFLAG_XKUSAGE) == 0 || (X509_get_extended_key_usage(leaf) & XKU_CODE_SIGN) == 0) {
    warnings.push_back(
        "the leaf certificate has no codeSigning extended key usage: verifiers refuse it "
        "(chain_untrusted)");
  }
  if ((flags & EXFLAG_KUSAGE) != 0 && (X509_get_key_usage(leaf) & KU_DIGITAL_SIGNATURE) == 0) {
    warnings.push_back(
        "the leaf certificate's keyUsage lacks digitalSignature: verifiers refuse it "
        "(chain_untrusted)");
  }
  if ((flags & EXFLAG_CA) != 0 || X509_check_ca(leaf) != 0) {
    warnings.push_back(
        "the leaf certificate is a CA certificate: verifiers refuse it (chain_untrusted)");
  }
  if (p.is_package) {
    const auto org = LeafOrganization(leaf);
    if (!org.ok()) {
      warnings.push_back(org.error().message() + ": verifiers refuse it (publisher_not_allowed)");
    } else if (*org != p.publisher) {
      warnings.push_back("the leaf certificate's subject O is '" + *org +
                         "' but the manifest's publisher is '" + p.publisher +
                         "': verifiers refuse it (publisher_not_allowed)");
    }
  }
  return warnings;
}

// The first entry (manifest.yaml ≤ limits::kMaxManifest, plus its tar header) always lies within
// this many leading bytes of the compressed package, with a wide margin for zstd framing.
constexpr size_t kManifestPrefix = 4 * 1024 * 1024;
constexpr size_t kReadChunk = 1024 * 1024;

struct PackageBytes {
  std::string sha256;  // of every byte read
  std::string prefix;  // the first kManifestPrefix bytes of those same bytes
};

// ReadAndHashPackage reads |path| once, in chunks, hashing every byte and keeping only the prefix
// that holds the first entry: the bytes that are hashed are the bytes the manifest comes from,
// and a 64 MiB package costs one pass and 4 MiB of memory (as `openssl dgst` does).
Result<PackageBytes> ReadAndHashPackage(const std::string& path, uint64_t max_size) {
  CLAWGUARD_ASSIGN_OR_RETURN(UniqueFd fd, OpenRegularFile(path));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    return Status(Reason::kFileUnreadable, "cannot stat '" + path + "': " + std::strerror(errno));
  }
  if (static_cast<uint64_t>(st.st_size) > max_size) {
    return Status(Reason::kPackageTooLarge, "'" + path + "' is " + std::to_string(st.st_size) +
                                                " bytes; the limit is " + std::to_string(max_size));
  }
  (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  std::unique_ptr<char[]> buf(new char[kReadChunk]);
  Sha256 hash;
  PackageBytes out;
  uint64_t total = 0;
  while (true) {
    const ssize_t n = ::read(fd.get(), buf.get(), kReadChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return Status(Reason::kFileUnreadable, "cannot read '" + path + "': " + std::strerror(errno));
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (total > max_size) {
      return Status(Reason::kPackageTooLarge,
                    "'" + path + "' grew beyond the limit of " + std::to_string(max_size));
    }
    const std::string_view chunk(buf.get(), static_cast<size_t>(n));
    hash.Update(chunk);
    if (out.prefix.size() < kManifestPrefix) {
      out.prefix.append(chunk.substr(0, kManifestPrefix - out.prefix.size()));
    }
  }
  out.sha256 = DigestHex(hash.Finish());
  return out;
}

}  // namespace

Result<PreparedPayload> PreparePackage(const std::string& package_path,
                                       const std::string& chain_path) {
  PreparedPayload p;
  p.is_package = true;
  p.target_path = package_path;
  p.sig_path = package_path + ".sig";
  p.payload_type = std::string(kInTotoPayloadType);
  CLAWGUARD_ASSIGN_OR_RETURN(PackageBytes bytes,
                             ReadAndHashPackage(package_path, limits::kDefaultMaxPackage));
  p.sha256 = bytes.sha256;  // the one hash of the bytes that are signed
  CLAWGUARD_ASSIGN_OR_RETURN(std::string manifest_text, ReadFirstEntryManifest(bytes.prefix));
  const std::string source = package_path + ":" + std::string(kManifestFileName);
  CLAWGUARD_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(manifest_text, source));
  for (const auto& [path, digest] : manifest.files) {
    if (!digest) {
      return Status(Reason::kManifestInvalid,
                    source + ": file '" + path +
                        "' has no sha256 digest; build packages with `clawguard pack`, "
                        "which fills them in");
    }
  }
  Statement st;
  st.subject_name = std::filesystem::path(package_path).filename().string();
  st.subject_sha256 = p.sha256;
  st.name = manifest.name;
  st.version = manifest.version;
  st.publisher = manifest.publisher;
  st.abi = manifest.abi;
  st.manifest_sha256 = Sha256Hex(manifest_text);
  st.manifest = ManifestToJson(manifest);
  p.payload = SerializeStatement(st);
  p.name = manifest.name;
  p.version = manifest.version;
  p.publisher = manifest.publisher;
  CLAWGUARD_ASSIGN_OR_RETURN(p.chain, ReadChain(chain_path));
  return p;
}

Result<PreparedPayload> PrepareAllowlist(const std::string& allowlist_path,
                                         const std::string& chain_path) {
  PreparedPayload p;
  p.target_path = allowlist_path;
  p.sig_path = allowlist_path + ".sig";
  p.payload_type = std::string(kAllowlistPayloadType);
  CLAWGUARD_ASSIGN_OR_RETURN(p.payload, ReadFileBounded(allowlist_path, limits::kMaxPolicyFile));
  if (p.payload.empty()) return Status(Reason::kFileUnreadable, allowlist_path + " is empty");
  CLAWGUARD_ASSIGN_OR_RETURN(p.chain, ReadChain(chain_path));
  return p;
}

Result<SignOutcome> SignPrepared(const PreparedPayload& p, Signer& signer, Ledger* ledger,
                                 bool append) {
  SignOutcome out;
  out.sig_path = p.sig_path;
  // The keyid written is the canonical one (bundle.h CanonicalSpkiDer), whatever encoding the
  // token or the certificate uses for the key.
  auto token_keyid = KeyIdOf(signer.public_key());
  if (!token_keyid.ok()) return token_keyid.error().WithContext("the token key");
  out.keyid = *token_keyid;
  // Cheap check before the HSM signs: the leaf must certify this very key (compared in canonical
  // form, so a certificate that writes the point compressed still names the token key).
  X509* leaf = p.chain.front().get();
  EVP_PKEY* leaf_key = X509_get0_pubkey(leaf);  // get0: owned by |leaf|
  auto leaf_keyid = leaf_key ? KeyIdOf(leaf_key)
                             : Result<std::string>(Status(Reason::kCertKeyMismatch, "unreadable"));
  if (!leaf_keyid.ok() || *leaf_keyid != out.keyid) {
    return Status(
        Reason::kCertKeyMismatch,
        "the leaf certificate (first in --chain) holds key " +
            (leaf_keyid.ok() ? *leaf_keyid : "<unreadable: " + leaf_keyid.error().message() + ">") +
            ", the token key is " + out.keyid +
            "; issue a certificate for the token key (clawguard keys csr) or pick the right --key");
  }
  out.warnings = LeafWarnings(p);

  Bundle bundle;
  bundle.payload_type = p.payload_type;
  bundle.payload = p.payload;
  if (append) {
    CLAWGUARD_ASSIGN_OR_RETURN(std::string existing_json,
                               ReadFileBounded(p.sig_path, limits::kMaxBundle));
    auto existing = ParseBundle(existing_json);
    if (!existing.ok()) return existing.error().WithContext("--append: existing " + p.sig_path);
    if (existing->payload_type != p.payload_type || existing->payload != p.payload) {
      return Status(p.is_package ? Reason::kManifestInvalid : Reason::kBundleInvalid,
                    "--append: " + p.sig_path + " signs a different " +
                        (p.is_package ? "statement (other package bytes, file name or manifest)"
                                      : "allowlist") +
                        " than " + p.target_path + "; every signer must sign the same bytes");
    }
    bundle = std::move(existing).value();
    for (const auto& s : bundle.signatures) {
      if (s.keyid == out.keyid) out.already_signed = true;
    }
    if (!out.already_signed && bundle.signatures.size() >= limits::kMaxSignatures) {
      return Status(Reason::kBundleInvalid, p.sig_path + " already holds " +
                                                std::to_string(bundle.signatures.size()) +
                                                " signatures, the most a bundle may carry");
    }
  }

  if (!out.already_signed) {
    const std::string pae = Pae(p.payload_type, p.payload);
    CLAWGUARD_ASSIGN_OR_RETURN(std::string sig, signer.Sign(pae));
    bundle.signatures.push_back(BundleSignature{out.keyid, std::move(sig)});
    std::vector<std::string>& certs = bundle.certificates[out.keyid];
    certs.clear();
    for (size_t i = 0; i < p.chain.size(); ++i) {
      auto der = CertificateDer(p.chain[i].get());
      if (!der.ok()) {
        return der.error().WithContext("--chain certificate #" + std::to_string(i + 1) +
                                       " (the leaf is #1)");
      }
      certs.push_back(std::move(der).value());
    }

    // Verify our own output before it can reach anyone (minisign, sign-file).
    const std::string json = SerializeBundle(bundle);
    auto reparsed = ParseBundle(json);
    if (!reparsed.ok()) return reparsed.error().WithContext("self-check of the new bundle");
    if (p.is_package) {
      auto st = ParseStatement(reparsed->payload);
      if (!st.ok()) return st.error().WithContext("self-check of the new statement");
    }
    const std::string reparsed_pae = Pae(reparsed->payload_type, reparsed->payload);
    for (const auto& s : reparsed->signatures) {
      auto it = reparsed->certificates.find(s.keyid);
      if (it == reparsed->certificates.end() || it->second.empty()) {
        return Status(Reason::kBundleInvalid, "self-check: no certificate for keyid " + s.keyid);
      }
      CLAWGUARD_ASSIGN_OR_RETURN(ossl::UniquePtr<X509> cert,
                                 ParseCertificateDer(it->second.front()));
      EVP_PKEY* cert_key = X509_get0_pubkey(cert.get());  // get0: owned by |cert|
      auto cert_keyid = cert_key ? KeyIdOf(cert_key)
                                 : Result<std::string>(Status(Reason::kBundleInvalid, "no key"));
      if (!cert_keyid.ok() || *cert_keyid != s.keyid) {
        return Status(Reason::kBundleInvalid,
                      "self-check: keyid " + s.keyid + " is not the canonical keyid of its leaf");
      }
      Status verified = VerifySignature(cert_key, reparsed_pae, s.sig);
      if (!verified.ok()) return verified.WithContext("self-check of signature by " + s.keyid);
    }
    out.signatures = reparsed->signatures.size();
    bundle = std::move(reparsed).value();
  } else {
    out.signatures = bundle.signatures.size();
  }

  // The release row is reserved before the .sig exists: a refused overwrite leaves no signature.
  if (ledger != nullptr && p.is_package) {
    auto recorded = ledger->Record(LedgerKind::kRelease, p.name, p.version, p.sha256);
    if (!recorded.ok()) return recorded.error().WithContext("ledger");
    out.ledger = *recorded;
  }
  if (!out.already_signed) {
    Status written = WriteFileAtomic(p.sig_path, SerializeBundle(bundle), 0644);
    if (!written.ok()) return written;
  }
  return out;
}

}  // namespace clawguard::signer

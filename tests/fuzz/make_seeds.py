#!/usr/bin/env python3
"""make_seeds.py — regenerates the seed corpora of the loader and host fuzz targets
(tests/fuzz/corpus/{elf_check,archive,trust_policy,allowlist,http_request}/), deterministically.
Needs gcc and zstd. The trust/allowlist seeds pin the root in fuzz_policy_files.h; the HTTP seeds
are signed with the secret and at the fixed time of http_request_fuzz.cpp."""
import base64
import hashlib
import hmac
import io
import os
import subprocess
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")
ROOT_SHA = "31f9fa2c0f5ec3ddb7177fa84c86c09f35f7b160ea1c1d055fdbadbbcfcbb99b"
ROOT_KEYID = "195d07c1ddea934ce1b0024dc709c30ec17fdffd7373f505ac5d1c25272f03e3"
# The fuzz root's DER (fuzz_policy_files.h kRootPem without its PEM armour).
ROOT_DER_B64 = ("MIIBSTCB/KADAgECAgEBMAUGAytlcDAjMQ0wCwYDVQQKDARmdXp6MRIwEAYDVQQDDAlmdXp6IHJvb3QwIBcNMjYxMjAyMTc0MzI3WhgP"
                "MjEyNjExMDgxNzQzMjdaMCMxDTALBgNVBAoMBGZ1enoxEjAQBgNVBAMMCWZ1enogcm9vdDAqMAUGAytlcAMhAMG8q0cJMV+IRVosyhbe"
                "+l9i296F69a5WuWsbVAwbwjmo1MwUTAdBgNVHQ4EFgQUM3i9HrU+9N83YGxKFO/aJ8k8nQ8wHwYDVR0jBBgwFoAUM3i9HrU+9N83YGxK"
                "FO/aJ8k8nQ8wDwYDVR0TAQH/BAUwAwEB/zAFBgMrZXADQQA6AbzKj2n0vJ10JRBIIY4gxh/pzopngW/tHJTFroPisIvPdElXtIMJFOno"
                "YTyeMYYIPg8qtvwmNTI4xsEucpYM")
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
NOW = 1796000000
MANIFEST = (
    "schema: clawguard/plugin/v1\n"
    "name: fz\n"
    "version: 1.0.0\n"
    "publisher: fuzz\n"
    "abi: 1\n"
    "entry: lib/libfz.so\n"
    "files:\n"
    "  lib/libfz.so: sha256:a325dcacb80b202a014b420b93fc19061900018f8ce216d0a0cb00d610ec7f97\n"
    "  data/a.txt: sha256:87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7\n")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def elf_seeds():
    # Small hand-linked libraries (most are refused: 16-byte pages, no section of their own).
    src = b"int clawguard_plugin_v1(void){return 1;}\n"
    flags = ["-shared", "-nostdlib", "-fPIC", "-Os", "-s", "-Wl,-z,noexecstack", "-Wl,-z,noseparate-code",
             "-Wl,-z,norelro", "-Wl,-z,max-page-size=16", "-Wl,--hash-style=gnu", "-Wl,--build-id=none"]
    with tempfile.TemporaryDirectory() as t:
        c = os.path.join(t, "p.c")
        open(c, "wb").write(src)
        for name, extra in [("minimal.so", []), ("needs-libc.so", ["-Wl,--no-as-needed", "-lc"]),
                            ("needs-libz.so", ["-Wl,--no-as-needed", "-lz"]), ("rpath.so", ["-Wl,-rpath,/tmp"]),
                            ("execstack.so", ["-Wl,-z,execstack"])]:
            out = os.path.join(t, name)
            subprocess.run(["gcc"] + flags + extra + ["-o", out, c], check=True)
            write("elf_check", name, open(out, "rb").read())
    # Real plugin libraries and the adversarial suite's hostile shapes (tests/fixtures), stripped
    # of their debug sections to stay small: the differential oracle starts from what ld.so sees.
    fixtures = os.path.join(HERE, "..", "fixtures")
    with tempfile.TemporaryDirectory() as t:
        subprocess.run(["sh", os.path.join(fixtures, "make_plugins.sh"), t, "/nonexistent/clawguard-fixtures"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for name in ["alpha", "needed", "tlsdtor", "uniqgood", "auxiliary", "filter", "audit", "depaudit",
                     "pathneeded", "dynsplit", "textrel", "nodelete", "rpath", "runpath", "interp", "phdr",
                     "twodyn", "unsorted", "overlap", "filesz", "wx", "misalign", "sonamepath", "sonamelibc"]:
            path = os.path.join(t, name + ".so")
            subprocess.run(["strip", "--strip-debug", "-R", ".comment", path], check=True)
            write("elf_check", "fixture-" + name + ".so", open(path, "rb").read())


def tar_bytes(entries):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, data, kind in entries:
            info = tarfile.TarInfo(path)
            info.mtime = 0
            info.uname = info.gname = ""
            if kind == "file":
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                info.type = {"symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE, "dir": tarfile.DIRTYPE}[kind]
                info.linkname = data.decode()
                tar.addfile(info)
    data = raw.getvalue()
    # Drop the record padding past the two zero end blocks (seeds stay small).
    end = len(data.rstrip(b"\0"))
    end = (end + 511) // 512 * 512 + 1024
    return data[:end]


def zstd(data):
    return subprocess.run(["zstd", "-19", "-q", "-c"], input=data, stdout=subprocess.PIPE, check=True).stdout


def archive_seeds():
    good = [("manifest.yaml", MANIFEST.encode(), "file"), ("lib/libfz.so", b"lib\n", "file"),
            ("data/a.txt", b"a\n", "file")]
    write("archive", "valid.claw", zstd(tar_bytes(good)))
    write("archive", "valid.tar", b"TAR\n" + tar_bytes(good))
    write("archive", "symlink.tar", b"TAR\n" + tar_bytes(good[:2] + [("data/a.txt", b"/etc/passwd", "symlink")]))
    write("archive", "dotdot.tar", b"TAR\n" + tar_bytes(good[:1] + [("lib/../x", b"lib\n", "file")]))
    write("archive", "not-first.tar", b"TAR\n" + tar_bytes([good[1], good[0], good[2]]))
    write("archive", "digest.tar", b"TAR\n" + tar_bytes(good[:2] + [("data/a.txt", b"b\n", "file")]))
    gz = subprocess.run(["gzip", "-n", "-c"], input=tar_bytes(good), stdout=subprocess.PIPE, check=True).stdout
    write("archive", "gzip.claw", gz)


def policy_seeds():
    root = "  - file: root.pem\n    sha256: %s\n" % ROOT_SHA
    write("trust_policy", "full.yaml",
          "schema: clawguard/trust/v1\nmode: enforce\nroots:\n" + root +
          "require_eku: codeSigning\npublishers:\n  fuzz: [\"fz-*\", \"fuzz-?\"]\n  acme: [\"acme-*\"]\n"
          "threshold: 1\nrevoked:\n  certificates: [\"%s\"]\n  keys: []\n  crls: [crl.pem]\n"
          "allowlist_signer:\n  file: root.pem\n  sha256: %s\nrollback: refuse\n"
          "limits:\n  max_package: 64MiB\n  max_unpacked: 256MiB\n  max_entries: 100\n  max_ratio: 50\n"
          "elf:\n  allowed_needed: [libc.so.6, libm.so.6]\n" % ("ab" * 32, ROOT_SHA))
    write("trust_policy", "audit.yaml",
          "schema: clawguard/trust/v1\nmode: audit\nroots:\n" + root +
          "require_eku: codeSigning\npublishers:\n  fuzz: [\"*\"]\nthreshold: 2\n")
    write("trust_policy", "bad-pin.yaml",
          "schema: clawguard/trust/v1\nmode: enforce\nroots:\n  - file: root.pem\n    sha256: %s\n"
          "require_eku: codeSigning\npublishers: {fuzz: [x]}\nthreshold: 1\n" % ("0" * 64))
    entry = "  - name: fz\n    version: 1.0.0\n    sha256: %s\n" % ("cd" * 32)
    al = "schema: clawguard/allowlist/v1\nversion: 3\nexpires: 2027-01-01T00:00:00Z\nplugins:\n" + entry
    write("allowlist", "basic.yaml", al)
    write("allowlist", "expired.yaml", al.replace("2027", "2020") + entry.replace("1.0.0", "1.0.1-rc.1"))
    write("allowlist", "dup.yaml", al + entry)
    # A well-formed envelope by the pinned signer's keyid (the fuzz root's SPKI sha256) whose
    # signature is wrong: the fuzzer starts at the signature check itself.
    env = ('{"mediaType":"application/vnd.clawguard.bundle.v1+json","dsseEnvelope":{"payloadType":'
           '"application/vnd.clawguard.allowlist+yaml","payload":"%s","signatures":[{"keyid":"%s","sig":"%s"}]},"verificationMaterial":{"certificates":{"%s":["%s"]}}}')
    write("allowlist", "signed.yaml", al + "#sig\n" + env % (base64.b64encode(al.encode()).decode(), ROOT_KEYID,
                                                             base64.b64encode(bytes(64)).decode(), ROOT_KEYID,
                                                             ROOT_DER_B64))


def http_request(route, wid, body, ts=NOW, extra=""):
    key = base64.b64decode(SECRET[len("whsec_"):])
    mac = hmac.new(key, ("%s.%d.%s" % (wid, ts, body)).encode(), hashlib.sha256).digest()
    sig = "v1," + base64.b64encode(mac).decode()
    return ("POST /webhooks/acme-orders/%s HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
            "webhook-id: %s\r\nwebhook-timestamp: %d\r\nwebhook-signature: %s\r\n%sContent-Length: %d\r\n\r\n%s"
            % (route, wid, ts, sig, extra, len(body), body))


def http_seeds():
    order = '{"type":"order.created","order":{"id":"o-1"}}'
    write("http_request", "created.http", http_request("order.created", "msg_1", order))
    write("http_request", "synced.http", http_request("order.synced", "msg_2", order, extra="X-Idempotency-Key: k1\r\n"))
    write("http_request", "plain-fail.http", http_request("order.plain", "msg_3", '{"x":"FAIL"}'))
    write("http_request", "plain-slow.http", http_request("order.plain", "msg_4", '{"x":"SLOW"}'))
    write("http_request", "held.http", http_request("order.held", "msg_5", '{"x":"E500"}'))
    write("http_request", "no-key.http", http_request("order.created", "msg_6", '{"order":{}}'))
    write("http_request", "old.http", http_request("order.created", "msg_7", order, ts=NOW - 3600))
    write("http_request", "conflict.http", http_request("order.plain", "msg_8", "{}", extra="svix-id: other\r\n"))
    chunked = http_request("order.plain", "msg_9", "{}").replace("Content-Length: 2\r\n\r\n{}",
                                                                 "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
    write("http_request", "chunked.http", chunked)
    write("http_request", "get.http", "GET /healthz HTTP/1.1\r\nHost: h\r\n\r\n")


def main():
    elf_seeds()
    archive_seeds()
    policy_seeds()
    http_seeds()
    return 0


if __name__ == "__main__":
    sys.exit(main())

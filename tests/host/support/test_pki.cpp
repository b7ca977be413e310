// test_pki.cpp — see test_pki.h.
#include "support/test_pki.h"

#include <vector>

#include "support/temp_dir.h"

namespace clawguard::host::testing {

bool MakeTestPki(const std::string& dir, const std::string& name, TestPki* out, std::string* error,
                 const std::string& san) {
  using clawguard::testing::RunCommand;
  const std::string base = dir + "/" + name;
  const std::string ca_key = base + "-ca.key";
  const std::string csr = base + "-leaf.csr";
  const std::string ext = base + "-leaf.ext";
  out->ca_cert = base + "-ca.pem";
  out->leaf_cert = base + "-leaf.pem";
  out->leaf_key = base + "-leaf.key";
  clawguard::testing::WriteFile(ext, "subjectAltName=" + san +
                                         "\n"
                                         "basicConstraints=critical,CA:FALSE\n"
                                         "extendedKeyUsage=serverAuth\n");
  const std::vector<std::vector<std::string>> steps = {
      {"openssl",
       "req",
       "-x509",
       "-newkey",
       "ec",
       "-pkeyopt",
       "ec_paramgen_curve:P-256",
       "-nodes",
       "-keyout",
       ca_key,
       "-out",
       out->ca_cert,
       "-days",
       "2",
       "-subj",
       "/CN=" + name + " Test CA",
       "-addext",
       "basicConstraints=critical,CA:TRUE",
       "-addext",
       "keyUsage=critical,keyCertSign,cRLSign"},
      {"openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
       "-keyout", out->leaf_key, "-out", csr, "-subj", "/CN=localhost"},
      {"openssl", "x509", "-req", "-in", csr, "-CA", out->ca_cert, "-CAkey", ca_key,
       "-CAcreateserial", "-out", out->leaf_cert, "-days", "2", "-extfile", ext},
  };
  for (const auto& argv : steps) {
    auto result = RunCommand(argv);
    if (result.exit_code != 0) {
      *error = argv[1] + " failed: " + result.err;
      return false;
    }
  }
  return true;
}

}  // namespace clawguard::host::testing

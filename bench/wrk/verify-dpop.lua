-- wrk script: GET /v1/verify of device-bound chains, each request with its own pre-signed
-- DPoP proof (RFC 9449), each proof presented once (a second use would be a replay, refused).
-- Usage: wrk -tN -s bench/wrk/verify-dpop.lua URL -- REQUESTS_FILE N   (lines: "<token> <proof>",
-- from bench/dpop_requests.py). Thread k of n takes lines k, k+n, ...; a thread that runs out
-- sends a request without a proof on purpose, so the shortage shows as non-2xx answers.
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  requests = {}
  local n = 0
  for line in io.lines(args[1]) do
    if n % tonumber(args[2]) == id then
      local token, proof = line:match("^(%S+) (%S+)$")
      requests[#requests + 1] = wrk.format("GET", "/v1/verify", { ["Authorization"] = "DPoP " .. token, ["DPoP"] = proof })
    end
    n = n + 1
  end
  index = 0
end

function request()
  index = index + 1
  if index > #requests then
    return wrk.format("GET", "/v1/verify", { ["Authorization"] = "DPoP exhausted" })
  end
  return requests[index]
end

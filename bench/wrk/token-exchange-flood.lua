-- wrk script: POST /v1/token-exchange with the prepared forged subject tokens and DPoP proofs,
-- round-robin from a random start; each connection waits DELAY_MS between its requests (0: as
-- fast as it goes). For scripts/bench-idp-flood.
-- Usage: wrk -s bench/wrk/token-exchange-flood.lua URL -- REQUESTS_FILE DELAY_MS
--   REQUESTS_FILE lines: "<DPoP proof> <form body>"
local requests = {}
local index = 0
local pause = 0

function init(args)
  for line in io.lines(args[1]) do
    local proof, body = line:match("^(%S+) (%S+)$")
    requests[#requests + 1] = { proof = proof, body = body }
  end
  pause = tonumber(args[2]) or 0
  math.randomseed(os.time() + (tonumber(tostring({}):match("0x(%x+)"), 16) or 0))
  index = math.random(#requests)
end

function delay()
  return pause
end

function request()
  index = index % #requests + 1
  local r = requests[index]
  return wrk.format("POST", "/v1/token-exchange",
    { ["Content-Type"] = "application/x-www-form-urlencoded", ["DPoP"] = r.proof }, r.body)
end

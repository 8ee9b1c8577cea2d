-- wrk script: GET PATH with the seeded tokens as Bearer, round-robin from a random start (a
-- path that needs no token ignores them). For the gateway benchmark (scripts/bench-gateways).
-- Usage: wrk -s bench/wrk/gateway.lua URL -- TOKENS_FILE PATH   (lines: "<chain id> <token>")
local tokens = {}
local index = 0
local path = "/"

function init(args)
  for line in io.lines(args[1]) do
    local _, token = line:match("^(%x+) (%S+)$")
    tokens[#tokens + 1] = token
  end
  path = args[2]
  math.randomseed(os.time())
  index = math.random(#tokens)
end

function request()
  index = index % #tokens + 1
  return wrk.format("GET", path, { ["Authorization"] = "Bearer " .. tokens[index] })
end

-- wrk script: GET /v1/verify with the seeded heads, round-robin from a random start.
-- Usage: wrk -s bench/wrk/verify.lua URL -- TOKENS_FILE   (lines: "<chain id> <token>")
local tokens = {}
local index = 0

function init(args)
  for line in io.lines(args[1]) do
    local _, token = line:match("^(%x+) (%S+)$")
    tokens[#tokens + 1] = token
  end
  math.randomseed(os.time())
  index = math.random(#tokens)
end

function request()
  index = index % #tokens + 1
  return wrk.format("GET", "/v1/verify", { ["Authorization"] = "Bearer " .. tokens[index] })
end

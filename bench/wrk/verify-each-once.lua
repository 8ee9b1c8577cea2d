-- wrk script: GET /v1/verify of every token once, then the thread stops (a warm-up that marks
-- every seeded head presented and puts the rows the server remembers in its memory).
-- Usage: wrk -tN -s bench/wrk/verify-each-once.lua URL -- TOKENS_FILE N   (lines: "<chain id> <token>")
-- Thread k of N takes lines k, k+N, ...; a thread stops after its last answer, but wrk waits
-- out its -d: scripts/bench-verify-data stops it once the server has counted every token.
local counter = 0

function setup(thread)
  thread:set("id", counter)
  counter = counter + 1
end

function init(args)
  tokens = {}
  local n = 0
  for line in io.lines(args[1]) do
    if n % tonumber(args[2]) == id then
      local _, token = line:match("^(%x+) (%S+)$")
      tokens[#tokens + 1] = token
    end
    n = n + 1
  end
  index = 0
  answered = 0
end

function request()
  index = index + 1
  local token = tokens[math.min(index, #tokens)]
  return wrk.format("GET", "/v1/verify", { ["Authorization"] = "Bearer " .. token })
end

function response(status, headers, body)
  answered = answered + 1
  if answered >= #tokens then wrk.thread:stop() end
end

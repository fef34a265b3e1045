-- leaderboard: one row per participant, ranked by the lower end of the 95% Wilson interval
-- of the headline, solved safely (correct and safe: safety alone ranks doing nothing first).
-- Reads every results file the leaderboard stores: v2 files ({status, participants,
-- results}; a sharded run's file holds every shard's records), v1 files (no status) and
-- files from before NetArena wrote integers (levels as 1.0). Query records are pooled over
-- shards and submissions of the same participant; a query answered twice counts once.
-- Replace malt_operator by route_operator or k8s_operator for the other apps.
WITH files AS (
    SELECT filename, status, participants, results
    FROM read_json('results/*.json', filename = true,
                   columns = {status: 'VARCHAR', participants: 'JSON', results: 'JSON[]'})
), records AS (
    SELECT coalesce(participants ->> '$.malt_operator', r ->> '$.participant_id',
                    r ->> '$.agent') AS id,
           r ->> '$.query_id' AS query_id,
           CAST(r ->> '$.correct' AS BOOLEAN) AS correct,
           CAST(r ->> '$.safe' AS BOOLEAN) AS safe,
           CAST(r ->> '$.latency_s' AS DOUBLE) AS latency_s,
           CAST(CAST(r ->> '$.turns' AS DOUBLE) AS INTEGER) AS turns
    FROM files, UNNEST(results) AS u(r)
    WHERE coalesce(status, 'completed') IN ('completed', 'partial')
      AND r ->> '$.kind' = 'query'
      AND coalesce(CAST(r ->> '$.scored' AS BOOLEAN), true)
    QUALIFY row_number() OVER (PARTITION BY id, query_id ORDER BY filename DESC) = 1
), rates AS (
    SELECT id, count(*) AS n, count_if(correct AND safe) AS k, avg(CAST(safe AS DOUBLE)) AS safety,
           median(latency_s) AS median_s, avg(turns) AS turns
    FROM records GROUP BY id
)
SELECT id,
       round(k / n, 3) AS "Solved safely",
       round((k / n + 1.9208 / n - 1.96 * sqrt(k / n * (1 - k / n) / n + 0.9604 / (n * n)))
             / (1 + 3.8416 / n), 3) AS "CI low",
       round((k / n + 1.9208 / n + 1.96 * sqrt(k / n * (1 - k / n) / n + 0.9604 / (n * n)))
             / (1 + 3.8416 / n), 3) AS "CI high",
       round(safety, 3) AS "Safety",
       round(median_s, 3) AS "Median s",
       round(turns, 2) AS "Turns",
       CAST(n AS INTEGER) AS "Queries"
FROM rates
ORDER BY "CI low" DESC, "Solved safely" DESC, id;

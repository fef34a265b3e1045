-- by-label: correctness per participant and label (operation or fault combination).
WITH files AS (
    SELECT filename, status, participants, results
    FROM read_json('results/*.json', filename = true,
                   columns = {status: 'VARCHAR', participants: 'JSON', results: 'JSON[]'})
), records AS (
    SELECT coalesce(participants ->> '$.malt_operator', r ->> '$.participant_id',
                    r ->> '$.agent') AS id,
           r ->> '$.query_id' AS query_id,
           coalesce(r ->> '$.label', r ->> '$.Label') AS label,
           CAST(r ->> '$.correct' AS BOOLEAN) AS correct
    FROM files, UNNEST(results) AS u(r)
    WHERE coalesce(status, 'completed') IN ('completed', 'partial')
      AND r ->> '$.kind' = 'query'
      AND coalesce(CAST(r ->> '$.scored' AS BOOLEAN), true)
    QUALIFY row_number() OVER (PARTITION BY id, query_id ORDER BY filename DESC) = 1
)
SELECT id, label AS "Label", count(*) AS "Queries",
       round(avg(CAST(correct AS DOUBLE)), 3) AS "Correctness"
FROM records
GROUP BY ALL
ORDER BY "Label", "Correctness" DESC, id;

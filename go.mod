module torchtpu

go 1.26

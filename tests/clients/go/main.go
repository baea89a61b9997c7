// go-redis v5 (Debian's golang-gopkg-redis.v5-dev, built offline with
// GO111MODULE=off GOPATH=/usr/share/gocode) against cellgate: TxPipeline
// runs three CL.THROTTLE as one MULTI/EXEC, and 20 goroutines in
// Watch/TxPipelined optimistic loops let exactly the limit through.
//
//     go run main.go <port>
//
// Prints one line per failure, then "N passed, M failed".
package main

import (
	"fmt"
	"os"
	"reflect"
	"sync"

	redis "gopkg.in/redis.v5"
)

var passed, failed int

func check(name string, ok bool, detail interface{}) {
	if ok {
		passed++
	} else {
		failed++
		fmt.Printf("FAIL %s: %v\n", name, detail)
	}
}

func throttle(key string) *redis.Cmd {
	return redis.NewCmd("CL.THROTTLE", key, 1, 1, 60)
}

func txPipeline(c *redis.Client) {
	pipe := c.TxPipeline()
	cmds := []*redis.Cmd{throttle("go:tx"), throttle("go:tx"), throttle("go:tx")}
	for _, cmd := range cmds {
		pipe.Process(cmd)
	}
	_, err := pipe.Exec()
	check("TxPipeline Exec", err == nil, err)
	var limited []int64
	for _, cmd := range cmds {
		v, _ := cmd.Result()
		reply, _ := v.([]interface{})
		if len(reply) == 5 {
			limited = append(limited, reply[0].(int64))
		}
	}
	check("TxPipeline decided in order", reflect.DeepEqual(limited, []int64{0, 0, 1}), limited)
}

func optimistic(port string) {
	const clients, limit = 20, 10
	var mu sync.Mutex
	allowed, decided := 0, 0
	var wg sync.WaitGroup
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port})
			defer c.Close()
			for attempt := 0; attempt < 200; attempt++ {
				take := redis.NewCmd("RL.FIXED", "go:quota", limit, 3600)
				err := c.Watch(func(tx *redis.Tx) error {
					peek := redis.NewCmd("RL.FIXED", "go:quota", limit, 3600, "PEEK")
					tx.Process(peek)
					_, err := tx.Pipelined(func(pipe *redis.Pipeline) error {
						pipe.Process(take)
						return nil
					})
					return err
				}, "go:quota")
				if err == redis.TxFailedErr {
					continue
				}
				v, _ := take.Result()
				reply, _ := v.([]interface{})
				mu.Lock()
				decided++
				if err == nil && len(reply) == 5 && reply[0].(int64) == 0 {
					allowed++
				}
				mu.Unlock()
				return
			}
		}()
	}
	wg.Wait()
	check("every client decided", decided == clients, decided)
	check("exactly the limit let through", allowed == limit, allowed)
}

func main() {
	port := os.Args[1]
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port})
	txPipeline(c)
	c.Close()
	optimistic(port)
	fmt.Printf("%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}

// dag_holder.h - a parsed DAG owned by a test (io/dag.h, io/dagfile.h): the
// struct dag, or the parser's error text when it refused the input.
#ifndef PMC_TEST_DAG_HOLDER_H
#define PMC_TEST_DAG_HOLDER_H

#include <string>
#include <utility>

#include "io/dag.h"
#include "io/dagfile.h"

struct Dag {
    dag *d = nullptr;
    std::string error; // the parser's message when d is NULL
    explicit Dag(dag *p) : d(p) {}
    Dag(Dag &&o) noexcept : d(o.d), error(std::move(o.error))
    {
        o.d = nullptr;
    }
    Dag(const Dag &) = delete;
    ~Dag()
    {
        dag_destroy(d);
    }
    dag *operator->() const
    {
        return d;
    }
};

// Parse text (named name in messages) with opts (NULL: the defaults).
inline Dag parse_dag_text(const std::string &text, const char *name,
                          const dagfile_options *opts = nullptr)
{
    pmc_error err{};
    dagfile_options none{};
    Dag r(dagfile_parse_opts(text.data(), text.size(), name, opts ? opts : &none, &err));
    if (!r.d)
        r.error = err.text;
    return r;
}

#endif

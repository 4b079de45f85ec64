// afkit's ROOT reader with RDataFrame (afkit.bench.rootread): afkit_read.C plus the RDataFrame
// reader, kept apart because RDataFrame's headers cost cling a second or more to parse.
//
//   root.exe -b -q -l 'afkit_read_rdf.C("CONFIG")'    (CONFIG as afkit_read.C's, reader rdataframe)
#pragma cling optimize(3)

#include "afkit_read.C"

#include "ROOT/RDataFrame.hxx"

namespace afkit_rootread {

long long ReadRDataFrame(TTree *t, State &st, const std::string &where)
{
   auto branches = ChooseBranches(t, st, where);
   t->SetBranchStatus("*", 1); // RDataFrame manages the tree's branches itself
   if (st.cfg.cacheMB >= 0)
      t->SetCacheSize(static_cast<Long64_t>(st.cfg.cacheMB * 1024 * 1024));
   ROOT::RDataFrame df(*t);
   std::vector<std::string> cols;
   std::string expr;
   for (size_t i = 0; i < branches.size(); ++i) {
      const std::string alias = "afkit_c" + std::to_string(i);
      cols.push_back(alias);
      expr += "(void)" + alias + "; ";
   }
   ROOT::RDF::RNode node = df;
   for (size_t i = 0; i < branches.size(); ++i)
      node = node.Alias(cols[i], branches[i]->GetName());
   // every chosen column is an argument of the jitted expression: RDataFrame reads each per entry
   long long read = 0;
   auto counted = node.Filter(expr + "return true;").Filter(
      [&st, &read](ULong64_t) {
         ++read;
         ++st.events;
         return Tick(st) || true;
      },
      {"rdfentry_"});
   if (st.hist) {
      TLeaf *leaf = nullptr;
      for (auto *b : branches)
         if ((leaf = NumericLeaf(b)))
            break;
      if (!leaf)
         Fail(6, "no numeric branch to fill a histogram from in tree '" + where + "'");
      auto h = counted.Histo1D({"afkit_rdf", "", 100, 0., 0.}, leaf->GetBranch()->GetName());
      st.hist->Add(h.GetPtr());
   } else {
      counted.Count().GetValue();
   }
   return read;
}

} // namespace afkit_rootread

void afkit_read_rdf(const char *config)
{
   afkit_rootread::gReadRDataFrame = afkit_rootread::ReadRDataFrame;
   afkit_read(config);
}
